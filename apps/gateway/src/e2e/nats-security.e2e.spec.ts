/**
 * End to end: NATS authentication and authorization (CONTRACT section 16). A private nats-server runs with the
 * configuration `admin nats-setup` writes; the whole platform runs on it with NATS_CREDS_DIR, and each
 * process's user is held to the permissions derived from the subject definitions.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { natsInboxPrefix, type NatsProcess, subjectsFor } from '@interns/contracts';
import { natsSecurityOptions } from '@interns/messaging';
import { type NatsServerProcess, Platform, SseResponse, startNatsServer, testNatsPrefix } from '@interns/testing';
import {
  API,
  createRunningIntern,
  eventually,
  IDENTITIES,
  KEYS,
  oauthToken,
  prompt,
  query,
  readStream,
} from '@interns/testing/e2e';

const run = promisify(execFile);
const prefix = testNatsPrefix();
const subjects = subjectsFor(prefix);
const VIOLATION = /Violation/;

let credsDir: string;
let nats: NatsServerProcess;
let platform: Platform;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  credsDir = join(await mkdtemp(join(tmpdir(), 'nats-creds-')), 'nats');
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS;
  await run(process.execPath, [resolve('dist/apps/admin/src/main.js'), 'nats-setup', '--dir', credsDir, '--prefix', prefix], { env });
  nats = await startNatsServer({ config: join(credsDir, 'nats-server.conf') });
  // Webhooks to a local port nothing listens on: the deliveries are recorded and attempted, never received.
  platform = await Platform.start({ env: { NATS_URL: nats.url, NATS_PREFIX: prefix, NATS_CREDS_DIR: credsDir, WEBHOOK_ALLOW_INSECURE: 'true' } });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await platform?.stop();
  await nats?.remove();
  if (credsDir) await rm(join(credsDir, '..'), { recursive: true, force: true });
});

/** A connection as one process's NATS user. */
async function connectAs(process: NatsProcess): Promise<NatsConnection> {
  const nc = await connect({
    servers: nats.url,
    maxReconnectAttempts: 0,
    ...natsSecurityOptions(process, { natsCredsDir: credsDir, natsTlsCa: null }),
  });
  connections.push(nc);
  return nc;
}

const violations = () => nats.output().split('\n').filter((line) => VIOLATION.test(line));

it('keeps the directory and every file private to its owner', async () => {
  expect((await stat(credsDir)).mode & 0o777).toBe(0o700);
  for (const file of ['nats-server.conf', 'gateway.creds', 'lifecycle.creds', 'runs.creds', 'analytics.creds', 'webhooks.creds', 'admin.creds']) {
    expect({ file, mode: (await stat(join(credsDir, file))).mode & 0o777 }).toEqual({ file, mode: 0o600 });
  }
});

it('runs the whole flow on the secured broker: create, provision, chat, a run followed and listed, analytics, webhooks, admin, delete', async () => {
  const webhook = await platform.api(`${API}/webhooks`, { token: KEYS.alice, json: { url: 'http://127.0.0.1:9/hook', events: ['run.completed'] } });
  expect(webhook.status).toBe(201);
  const internId = await createRunningIntern(platform);
  const chatted = await prompt(platform, internId, '/say hello secured nats');
  const summary = await readStream(chatted);
  expect(summary.usage).not.toBeNull();
  // The run's chunk log: written by runs into its stream, replayed by the gateway's ordered consumer.
  const runId = chatted.headers['x-run-id'] as string;
  const replay = await platform.getStream(`${API}/interns/${internId}/runs/${runId}/stream`, KEYS.alice);
  expect(replay).toBeInstanceOf(SseResponse);
  expect((await (replay as SseResponse).all()).slice(0, -1)).toEqual(chatted.events.slice(0, -1));
  const runs = await platform.api(`${API}/interns/${internId}/runs`, { token: KEYS.alice });
  expect(runs.body.data.map((listed: { id: string }) => listed.id)).toEqual([runId]);
  const facts = await eventually(
    () => query<{ finish_reason: string | null }>(platform, 'SELECT finish_reason FROM analytics.run_facts WHERE session_id = $1', [summary.sessionId]),
    (rows) => rows.length === 1 && rows[0].finish_reason !== null,
    15_000,
  );
  expect(facts[0].finish_reason).toBe('stop');
  expect((await platform.api(`${API}/analytics/meta`, { token: KEYS.management })).status).toBe(200);
  // The webhooks service's durable consumer turned the run's end into a delivery, and it was attempted.
  const deliveries = await eventually(
    () => platform.api(`${API}/webhooks/${webhook.body.id}/deliveries`, { token: KEYS.alice }),
    (answer) => typeof answer.body.data?.[0]?.last_error === 'string',
    15_000,
  );
  expect(deliveries.body.data).toEqual([expect.objectContaining({ event_type: 'run.completed', last_error: expect.any(String) })]);
  // The admin CLI reaches lifecycle as its own user.
  const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', internId);
  expect(key).toEqual(expect.any(String));
  // A question (manual approval), then the intern's deletion: runs purges its transcripts, its run chunks and the
  // question's integration event as its own user (CONTRACT section 22).
  const asked = await readStream(await prompt(platform, internId, '/shell echo secured', { approvalMode: 'manual' }));
  expect(asked.finishReason).toBe('tool_calls');
  expect((await platform.api(`${API}/interns/${internId}`, { method: 'DELETE', token: KEYS.alice })).status).toBe(202);
  await eventually(
    () => platform.api(`${API}/interns/${internId}`, { token: KEYS.alice }),
    (got) => got.status === 404,
    60_000,
  );
  const purged = await query<{ n: number }>(platform, 'SELECT count(*)::int AS n FROM runs.runs WHERE intern_id = $1 AND transcript_purged_at IS NULL', [internId]);
  expect(purged[0].n).toBe(0);
  // No process was refused anything on the way.
  expect(violations()).toEqual([]);
}, 150_000);

it("serves an intern's door on the secured broker: hostname lookup, token check, signing keys, nonce claim, cache events", async () => {
  const internId = await createRunningIntern(platform);
  const { hostname } = (await platform.api(`${API}/interns/${internId}`, { token: KEYS.alice })).body;
  const oauth = await oauthToken(platform, 'interns vault:read');
  const { token } = (await platform.api(`${API}/interns/${internId}/daemon`, { token: oauth })).body;
  const door = (path: string, raw?: string, headers: Record<string, string> = {}) =>
    platform.api(path, { token, raw, headers: { host: hostname, ...(raw === undefined ? {} : { 'content-type': 'application/json' }), ...headers } });
  expect((await door('/')).body).toMatchObject({ intern_id: internId, member_id: 'alice' });
  const body = '{"input":"through the door"}';
  const signed = await platform.api(`${API}/interns/${internId}/daemon/sign`, {
    token: oauth,
    json: { bodySha256: createHash('sha256').update(body).digest('hex'), route: { method: 'POST', path: '/api/invoke' } },
  });
  expect((await door('/api/invoke', body, signed.body)).status).toBe(202);
  expect((await door('/api/invoke', body, signed.body)).body.error.metadata.reason).toBe('invalid_signature');
  expect((await platform.api(`${API}/interns/${internId}/suspend`, { method: 'POST', token: KEYS.alice })).status).toBe(200);
  await eventually(() => door('/'), (answer) => answer.status === 409);
  expect(violations()).toEqual([]);
}, 90_000);

it("follows the workspace event stream on the secured broker: the gateway's own stream sourcing the integration event streams", async () => {
  const events = await platform.getStream(`${API}/events`, KEYS.alice);
  if (!(events instanceof SseResponse)) throw new Error(`events answered ${events.status}: ${JSON.stringify(events.body)}`);
  const internId = await createRunningIntern(platform);
  expect((await readStream(await prompt(platform, internId, '/say events'))).finishReason).toBe('stop');
  await events.until((data) => data.some((text) => text.includes(internId) && text.includes('"status":"running"')), 30_000);
  await events.until((data) => data.some((text) => text.includes(internId) && text.includes('"type":"run.completed"')), 30_000);
  events.close();
  expect(violations()).toEqual([]);
}, 90_000);

it('refuses anonymous connections', async () => {
  await expect(connect({ servers: nats.url, maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization/i);
});

it('refuses a lifecycle command from the runs user', async () => {
  const runs = await connectAs('runs');
  await expect(runs.request(subjects.lifecycle.createIntern, '{}', { timeout: 3000 })).rejects.toThrow();
  await eventually(
    async () => violations(),
    (lines) => lines.some((line) => line.includes(subjects.lifecycle.createIntern)),
  );
});

it('refuses analytics a subscription to chat streams, which the gateway may read', async () => {
  const analytics = await connectAs('analytics');
  const denied = analytics.subscribe(`${prefix}.runs.stream.>`);
  await expect(denied.closed).resolves.toBeInstanceOf(Error);

  const gateway = await connectAs('gateway');
  const allowed = gateway.subscribe(subjects.runs.stream('probe'));
  await gateway.flush();
  await new Promise((done) => setTimeout(done, 200));
  expect(allowed.isClosed()).toBe(false);
});

it("keeps each process's replies to itself", async () => {
  const runs = await connectAs('runs');
  const denied = runs.subscribe(`${natsInboxPrefix('gateway')}.>`);
  await expect(denied.closed).resolves.toBeInstanceOf(Error);

  const gateway = await connectAs('gateway');
  const own = gateway.subscribe(`${natsInboxPrefix('gateway')}.probe`);
  await gateway.flush();
  await new Promise((done) => setTimeout(done, 200));
  expect(own.isClosed()).toBe(false);
});

it("lets only analytics use analytics' durable consumer", async () => {
  const stream = subjects.eventStreamName('runs');
  const analytics = await connectAs('analytics');
  expect((await (await jetstream(analytics).consumers.get(stream, 'analytics')).info(true)).name).toBe('analytics');

  const lifecycle = await connectAs('lifecycle');
  await expect(jetstream(lifecycle).consumers.get(stream, 'analytics')).rejects.toThrow();
  const next = `$JS.API.CONSUMER.MSG.NEXT.${stream}.analytics`;
  await expect(lifecycle.request(next, JSON.stringify({ batch: 1, expires: 1_000_000_000 }), { timeout: 3000 })).rejects.toThrow();
  await eventually(
    async () => violations(),
    (lines) => lines.some((line) => line.includes(next)),
  );
});
