/**
 * End to end: an intern's files with the direct transfer port off (FILE_TRANSFER_PORT=0), so bodies go over NATS
 * in chunks: the fallback stays tested beside the direct path (files.e2e.spec.ts). Also the per-replica cap on
 * transfers (FILE_TRANSFERS_PER_REPLICA), which holds on both paths.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { call, Platform } from '@interns/testing';
import { API, createRunningIntern, eventually, IDENTITIES, KEYS, refusal } from '@interns/testing/e2e';

const CAP = 2;
let platform: Platform;
let internId: string;

const filesPath = (path: string) => `${API}/interns/${internId}/files/${path}`;
const port = () => Number(new URL(platform.gatewayUrl).port);

function request(method: string, path: string, options: { body?: Buffer | string; chunked?: boolean } = {}) {
  return call(port(), filesPath(path), { method, body: options.body, chunked: options.chunked, headers: { authorization: `Bearer ${KEYS.alice}` } });
}

/** An upload whose client announces a megabyte, sends a kilobyte and waits: its transfer stays open (it holds a slot). */
function heldUpload(path: string): ClientRequest {
  const outgoing = httpRequest({
    host: '127.0.0.1',
    port: port(),
    method: 'PUT',
    path: filesPath(path),
    headers: { host: 'localhost', authorization: `Bearer ${KEYS.alice}`, 'content-type': 'application/x-anything', 'content-length': String(1024 * 1024) },
    agent: false,
  });
  outgoing.on('error', () => undefined);
  outgoing.write(randomBytes(1024));
  return outgoing;
}

beforeAll(async () => {
  platform = await Platform.start({
    env: { FILE_TRANSFER_PORT: '0', FILE_TRANSFERS_PER_REPLICA: String(CAP), WORKSPACE_QUOTA_BYTES: String(8 * 1024 * 1024), FILE_UPLOAD_MAX_BYTES: String(6 * 1024 * 1024) },
  });
  await platform.applyIdentities(IDENTITIES);
  internId = await createRunningIntern(platform);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

it('moves a binary file up and down over NATS, byte for byte', async () => {
  const bytes = randomBytes(3 * 1024 * 1024 + 7);
  const created = await request('PUT', 'nats/trip.bin', { body: bytes, chunked: true });
  expect([created.status, (created.json as { size: number }).size]).toEqual([201, bytes.length]);
  const read = await request('GET', 'nats/trip.bin');
  expect([read.status, read.headers['content-length'], read.bytes.equals(bytes)]).toEqual([200, String(bytes.length), true]);
}, 60_000);

it('refuses a chunked upload past the quota with 409 and keeps nothing of it', async () => {
  const answer = await request('PUT', 'nats/over/quota.bin', { body: randomBytes(5 * 1024 * 1024 + 512 * 1024), chunked: true });
  expect([answer.status, answer.json]).toEqual([409, refusal(409, 'limit_reached')]);
  expect(await readdir(join(platform.env.DATA_DIR, 'workspaces', internId, 'nats'))).toEqual(['trip.bin']);
}, 60_000);

it(`serves ${CAP} transfers at once per runs replica: one more is 409 limit_reached until one ends`, async () => {
  const held = Array.from({ length: CAP }, (_, n) => heldUpload(`nats/held-${n}.bin`));
  // Once both are open (their sandbox writers started), a download is one too many.
  const refused = await eventually(() => request('GET', 'nats/trip.bin'), (answer) => answer.status !== 200, 10_000);
  expect([refused.status, refused.json]).toEqual([409, refusal(409, 'limit_reached')]);
  expect((refused.json as { error: { message: string } }).error.message).toMatch(/at once/);
  // A listing holds no transfer.
  expect((await request('GET', 'nats')).status).toBe(200);
  for (const outgoing of held) outgoing.destroy();
  const again = await eventually(() => request('GET', 'nats/trip.bin'), (answer) => answer.status === 200, 5_000);
  expect(again.bytes.length).toBe(3 * 1024 * 1024 + 7);
  // The held uploads were aborted with their clients: nothing of them remains.
  await eventually(() => readdir(join(platform.env.DATA_DIR, 'workspaces', internId, 'nats')), (names) => names.join() === 'trip.bin', 5_000);
}, 60_000);
