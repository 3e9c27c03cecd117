/**
 * End to end: teardown failures and the provisioning queue, on a platform whose archive location cannot be
 * written and with a single provisioning slot.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import { IDENTITIES, KEYS } from '@interns/testing/e2e';

/** The fields of an Intern these tests read. */
type InternBody = { status: string; progress: unknown; hostname: string | null; last_failure_message: string | null };

const API = '/api/v1';
let platform: Platform;

const get = (id: string) => platform.api(`${API}/interns/${id}`, { token: KEYS.alice });
const refusal = (status: number, reason: string) => ({
  error: { code: status, message: expect.any(String), metadata: { reason, retryable: false } },
});

async function until(id: string, accept: (body: InternBody | null) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await get(id);
    const body = response.status === 404 ? null : response.body;
    if (accept(body)) return body;
    if (Date.now() > deadline) throw new Error(`timed out at ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function createRunning(name: string) {
  const created = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name, provision: true } });
  expect(created.status).toBe(201);
  await until(created.body.id, (b) => b?.status === 'running');
  return created.body.id as string;
}

beforeAll(async () => {
  // A regular file where the archive directory should be: writing archives fails for real (ENOTDIR).
  const blocker = join(await mkdtemp(join(tmpdir(), 'archive-blocker-')), 'not-a-directory');
  await writeFile(blocker, 'x');
  platform = await Platform.start({
    env: { ARCHIVE_DIR: join(blocker, 'archives'), PROVISION_CONCURRENCY: '1', PROVISION_STEP_DELAY_MS: '200' },
  });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

it('an archive failure leaves destroy_failed; delete needs the acknowledgement, then the intern is gone', async () => {
  const id = await createRunning(`doomed-${randomUUID().slice(0, 6)}`);
  expect((await platform.api(`${API}/interns/${id}`, { token: KEYS.alice, method: 'DELETE' })).status).toBe(202);
  const failed = await until(id, (b) => b?.status === 'destroy_failed');
  expect(failed.last_failure_message).toMatch(/^workspace_archive_failed: /);

  for (const action of ['provision', 'suspend']) {
    expect((await platform.api(`${API}/interns/${id}/${action}`, { token: KEYS.alice, method: 'POST' })).body).toEqual(
      refusal(409, 'intern_busy'),
    );
  }
  expect(
    (await platform.api(`${API}/interns/${id}`, { token: KEYS.alice, method: 'PATCH', json: { description: 'x' } })).body,
  ).toEqual(refusal(409, 'intern_busy'));

  const refused = await platform.api(`${API}/interns/${id}`, { token: KEYS.alice, method: 'DELETE' });
  expect(refused.body).toEqual(refusal(409, 'workspace_loss_not_acknowledged'));
  const acknowledged = await platform.api(`${API}/interns/${id}`, {
    token: KEYS.alice,
    method: 'DELETE',
    json: { acknowledge_workspace_loss: true },
  });
  expect(acknowledged.status).toBe(202);
  await until(id, (b) => b === null);
}, 60_000);

it('with PROVISION_CONCURRENCY=1 a second provision waits in queued until the first finishes', async () => {
  const first = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: `first-${randomUUID().slice(0, 6)}`, provision: true } });
  const second = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: `second-${randomUUID().slice(0, 6)}`, provision: true } });
  await until(first.body.id, (b) => b?.status === 'provisioning');
  let sawSecondQueuedWhileFirstProvisioning = false;
  for (;;) {
    const [a, b] = await Promise.all([get(first.body.id), get(second.body.id)]);
    if (a.body.status === 'provisioning') {
      expect(b.body.status).toBe('queued');
      sawSecondQueuedWhileFirstProvisioning = true;
    }
    if (a.body.status === 'running') break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  expect(sawSecondQueuedWhileFirstProvisioning).toBe(true);
  await until(second.body.id, (b) => b?.status === 'running');
}, 60_000);
