/**
 * End to end: provisioning, suspension and teardown (CONTRACT sections 4 and 5) through the real services,
 * the runs service's local runtime included.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import { IDENTITIES, KEYS } from '@interns/testing/e2e';

/** The fields of an Intern these tests read. */
type InternBody = { status: string; progress: unknown; hostname: string | null; last_failure_message: string | null };

const API = '/api/v1';
const STEP_DELAY_MS = 150;
const CHATAPP_WORKSPACE = '55555555-5555-4555-8555-555555555555';
const CHATAPP_KEY = 'uk_chatapp_alice';
let platform: Platform;

const intern = (id: string, token: string = KEYS.alice) => platform.api(`${API}/interns/${id}`, { token });
const command = (id: string, action: 'provision' | 'suspend', init: { raw?: string; headers?: Record<string, string> } = {}) =>
  platform.api(`${API}/interns/${id}/${action}`, { token: KEYS.alice, method: 'POST', ...init });
const remove = (id: string, json?: unknown, token: string = KEYS.alice) =>
  platform.api(`${API}/interns/${id}`, { token, method: 'DELETE', json });
const refusal = (status: number, reason: string) => ({
  error: { code: status, message: expect.any(String), metadata: { reason, retryable: false } },
});
const uniqueName = (stem: string) => `${stem}-${randomUUID().slice(0, 8)}`;

async function create(body: Record<string, unknown>, token: string = KEYS.alice) {
  const response = await platform.api(`${API}/interns`, { token, json: body });
  expect(response.status).toBe(201);
  return response.body as { id: string; name: string; status: string };
}

/** Polls GET until `done`, returning every distinct (status, step) seen on the way. */
async function watch(id: string, done: (body: InternBody | null) => boolean, timeoutMs = 20_000, token: string = KEYS.alice) {
  const seen: { status: string; progress: unknown }[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await intern(id, token);
    const body = response.status === 404 ? { status: 'gone', progress: null } : response.body;
    const last = seen[seen.length - 1];
    if (!last || last.status !== body.status || JSON.stringify(last.progress) !== JSON.stringify(body.progress)) {
      seen.push({ status: body.status, progress: body.progress });
    }
    if (done(response.status === 404 ? null : body)) return { seen, body };
    if (Date.now() > deadline) throw new Error(`timed out; seen ${JSON.stringify(seen)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const isRunning = (body: InternBody | null) => body?.status === 'running';
const isGone = (body: InternBody | null) => body === null;

beforeAll(async () => {
  platform = await Platform.start({ env: { PROVISION_STEP_DELAY_MS: String(STEP_DELAY_MS) } });
  await platform.applyIdentities({
    ...IDENTITIES,
    organizations: [
      ...IDENTITIES.organizations,
      { id: 'chatty', name: 'Chatty', programme: true, lifecycle_writes: true, chatapp_install_required: true },
    ],
    workspaces: [...IDENTITIES.workspaces, { id: CHATAPP_WORKSPACE, organization_id: 'chatty', name: 'chatty' }],
    members: [...IDENTITIES.members, { id: 'chatty-alice', organization_id: 'chatty', active: true }],
    api_keys: [
      ...IDENTITIES.api_keys,
      { key: CHATAPP_KEY, kind: 'user', organization_id: 'chatty', workspace_id: CHATAPP_WORKSPACE, member_id: 'chatty-alice' },
    ],
  });
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

it('walks create, provision, running, suspend, provision, delete, gone', async () => {
  const created = await create({ name: uniqueName('walker') });
  expect(created.status).toBe('stopped');

  const provisioned = await command(created.id, 'provision');
  expect(provisioned.status).toBe(202);
  expect(provisioned.body).toEqual({ provisioning: true });

  const { seen, body } = await watch(created.id, isRunning);
  const steps = seen.filter((s) => s.status === 'provisioning').map((s) => s.progress);
  expect(steps).toEqual([
    { step_label: 'Preparing workspace disk', step_number: 1, total_steps: 4 },
    { step_label: 'Assigning hostname', step_number: 2, total_steps: 4 },
    { step_label: 'Booting runtime', step_number: 3, total_steps: 4 },
    { step_label: 'Waiting for runtime health', step_number: 4, total_steps: 4 },
  ]);
  expect(body.progress).toBeNull();
  expect(body.hostname).toBe(`${created.name}-${created.id.slice(0, 8)}.interns.localhost`);

  expect((await command(created.id, 'provision')).body).toEqual(refusal(409, 'intern_busy'));

  const suspended = await command(created.id, 'suspend');
  expect(suspended.status).toBe(200);
  expect(suspended.body).toEqual({ suspended: true });
  expect((await intern(created.id)).body.status).toBe('stopped');
  expect((await command(created.id, 'suspend')).body).toEqual({ suspended: true });

  expect((await command(created.id, 'provision')).status).toBe(202);
  await watch(created.id, isRunning);

  const deleted = await remove(created.id);
  expect(deleted.status).toBe(202);
  expect(deleted.body).toEqual({ deleting: true });
  const teardown = await watch(created.id, isGone);
  expect(teardown.seen.map((s) => s.status)).toContain('destroying');
  expect((await intern(created.id)).body).toEqual(refusal(404, 'not_found'));
  const listed = await platform.api(`${API}/interns?limit=500`, { token: KEYS.alice });
  expect(listed.body.data.map((i: { id: string }) => i.id)).not.toContain(created.id);
  // The name is free again.
  await create({ name: created.name });
}, 60_000);

it('provisions at create with provision: true', async () => {
  const response = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: uniqueName('eager'), provision: true } });
  expect(response.status).toBe(201);
  expect(['queued', 'provisioning']).toContain(response.body.status);
  await watch(response.body.id, isRunning);
});

it('waits for the chat-app install, and provisions once it is recorded', async () => {
  const created = await create({ name: uniqueName('chatty'), provision: true }, CHATAPP_KEY);
  expect(created.status).toBe('awaiting_chatapp_install');
  await new Promise((resolve) => setTimeout(resolve, 4 * STEP_DELAY_MS));
  expect((await intern(created.id, CHATAPP_KEY)).body.status).toBe('awaiting_chatapp_install');
  expect((await platform.api(`${API}/interns/${created.id}/provision`, { token: CHATAPP_KEY, method: 'POST' })).status).toBe(202);

  await platform.admin('chatapp-installed', '--workspace', CHATAPP_WORKSPACE);
  await watch(created.id, isRunning, 20_000, CHATAPP_KEY);
  // Once recorded, new interns of the workspace do not wait.
  const later = await create({ name: uniqueName('later'), provision: true }, CHATAPP_KEY);
  expect(later.status).not.toBe('awaiting_chatapp_install');
}, 60_000);

it('fails provisioning for a model no provider serves, and succeeds once the model is fixed', async () => {
  const created = await create({ name: uniqueName('unserved'), model: 'openai/gpt-4.1' });
  expect((await command(created.id, 'provision')).status).toBe(202);
  const { body } = await watch(created.id, (b) => b?.status === 'failed');
  expect(body.progress).toBeNull();
  expect(body.last_failure_message).toMatch(/openai\/gpt-4\.1.*provider/);

  const fixed = await platform.api(`${API}/interns/${created.id}`, { token: KEYS.alice, method: 'PATCH', json: { model: null } });
  expect(fixed.status).toBe(200);
  expect((await command(created.id, 'provision')).status).toBe(202);
  const recovered = await watch(created.id, isRunning);
  expect(recovered.body.last_failure_message).toBeNull();
}, 60_000);

it('applies the body rules of provision, suspend and delete', async () => {
  const created = await create({ name: uniqueName('bodies') });
  expect((await command(created.id, 'suspend', { raw: '{}', headers: { 'content-type': 'text/plain' } })).status).toBe(200);
  expect((await command(created.id, 'suspend', { raw: '{}' })).status).toBe(200);
  expect((await command(created.id, 'suspend', { raw: '{"x":1}', headers: { 'content-type': 'application/json' } })).body).toEqual(
    refusal(400, 'invalid_body'),
  );
  expect((await command(created.id, 'provision', { raw: '[]', headers: { 'content-type': 'application/json' } })).body).toEqual(
    refusal(400, 'invalid_body'),
  );
  const textDelete = await platform.api(`${API}/interns/${created.id}`, {
    token: KEYS.alice,
    method: 'DELETE',
    raw: '{"acknowledge_workspace_loss":true}',
    headers: { 'content-type': 'text/plain' },
  });
  expect(textDelete.body).toEqual(refusal(415, 'unsupported_media_type'));
  expect((await remove(created.id, { acknowledge: true })).body).toEqual(refusal(400, 'invalid_body'));
  expect((await remove(randomUUID())).body).toEqual(refusal(404, 'not_found'));
  expect((await remove(created.id, {})).status).toBe(202);
  // While destroying: delete again is accepted, every other write is busy.
  const again = await remove(created.id);
  if (again.status === 202) expect(again.body).toEqual({ deleting: true });
  else expect(again.body).toEqual(refusal(404, 'not_found'));
});

it('serves the identicon whose SHA-256 is icon_sha256, with ETag and immutable caching under ?v=', async () => {
  const created = await create({ name: uniqueName('icon') });
  const sha = (await intern(created.id)).body.icon_sha256 as string;
  const icon = await platform.api(`${API}/interns/${created.id}/icon`, { token: KEYS.alice });
  expect(icon.status).toBe(200);
  expect(icon.headers.get('content-type')).toBe('image/png');
  expect(createHash('sha256').update(icon.raw).digest('hex')).toBe(sha);
  expect(icon.headers.get('etag')).toBe(`"${sha}"`);
  const pinned = await platform.api(`${API}/interns/${created.id}/icon?v=${sha}`, { token: KEYS.alice });
  expect(pinned.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
  expect(createHash('sha256').update(pinned.raw).digest('hex')).toBe(sha);
  expect((await platform.api(`${API}/interns/${randomUUID()}/icon`, { token: KEYS.alice })).body).toEqual(refusal(404, 'not_found'));
});
