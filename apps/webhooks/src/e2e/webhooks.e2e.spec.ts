/**
 * End to end: webhooks (CONTRACT section 13) through the gateway, the webhooks service and a local receiver.
 * Credentials and body rules, workspace visibility, every event type delivered with a Standard Webhooks
 * signature (verified here with node:crypto, not the service's code), retries with one `webhook-id`, `failed`
 * after the schedule, the deliveries log, delete stopping deliveries, and a webhooks process killed (SIGKILL)
 * mid-delivery losing nothing and duplicating at most the delivery in flight.
 */
import { Platform, independentSignature, Receiver, type ReceivedRequest } from '@interns/testing';
import {
  API,
  createIntern,
  createRunningIntern,
  eventually,
  IDENTITIES,
  ISO_MS,
  KEYS,
  prompt,
  readStream,
  refusal,
  sleep,
  UUID,
  WS_MAIN,
} from '@interns/testing/e2e';

const WEBHOOKS = `${API}/webhooks`;
const RETRY_SCHEDULE_MS = [200, 400];
const ALL_TYPES = ['intern.status_changed', 'run.completed', 'run.failed', 'question.opened'];
const UNAUTHENTICATED = { error: { code: 401, message: 'invalid or missing API key' } };

let platform: Platform;
let receiver: Receiver;
/** Per receiver path (`/hook/<name>`): how to answer. Default 200. */
const behaviour = new Map<string, (request: ReceivedRequest) => number | 'hang'>();

beforeAll(async () => {
  receiver = await Receiver.start((request) => (behaviour.get(request.url) ?? (() => 200))(request));
  platform = await Platform.start({
    env: {
      WEBHOOK_ALLOW_INSECURE: 'true',
      WEBHOOK_RETRY_SCHEDULE_MS: RETRY_SCHEDULE_MS.join(','),
      WEBHOOK_TIMEOUT_MS: '1000',
      CHAT_TURNS_PER_MINUTE: '1000',
      // Models of other authors go to a provider that is not there: their runs end `error` (run.failed).
      MODEL_API_BASE_URL: 'http://127.0.0.1:9',
      MODEL_API_KEY: 'test-key',
    },
  });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
  await receiver?.stop();
});

const hookUrl = (name: string) => `http://127.0.0.1:${receiver.port}/hook/${name}`;
const received = (name: string) => receiver.requests.filter((request) => request.url === `/hook/${name}`);
const payloadOf = (request: ReceivedRequest) => JSON.parse(request.body);

function create(json: unknown, token: string = KEYS.alice) {
  return platform.api(WEBHOOKS, { token, json });
}

async function createEndpoint(name: string, events: string[] = ALL_TYPES): Promise<{ id: string; secret: string }> {
  const created = await create({ url: hookUrl(name), events, description: name });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.text}`);
  return created.body;
}

function deliveries(endpointId: string, token: string = KEYS.alice) {
  return platform.api(`${WEBHOOKS}/${endpointId}/deliveries`, { token });
}

/** The signature of a received request, checked with the endpoint's secret by an HMAC of our own. */
function expectSigned(request: ReceivedRequest, secret: string): void {
  const id = request.headers['webhook-id'] as string;
  const timestamp = request.headers['webhook-timestamp'] as string;
  expect(timestamp).toMatch(/^\d+$/);
  expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(120);
  expect(request.headers['webhook-signature']).toBe(independentSignature(secret, id, timestamp, request.body));
  expect(payloadOf(request).id).toBe(id);
}

/** Runs one chat turn to its end; returns the run's id. (`readStream` checks the chunks of scripted runs only.) */
async function chatRun(internId: string, text: string, scripted = true): Promise<string> {
  const stream = await prompt(platform, internId, text);
  if (scripted) await readStream(stream, 20_000);
  else await stream.all(20_000);
  return stream.headers['x-run-id'] as string;
}

describe('credentials (section 13: user and organization keys, OAuth with interns)', () => {
  const body = () => ({ url: hookUrl('creds'), events: ['run.completed'] });

  it('answers 401 without a usable credential', async () => {
    for (const token of [undefined, 'uk_nobody', KEYS.disabled]) {
      const response = await platform.api(WEBHOOKS, { token });
      expect({ status: response.status, body: response.body }).toEqual({ status: 401, body: UNAUTHENTICATED });
    }
  });

  it('answers 403 forbidden to management and intern keys, and to a member who lost access', async () => {
    const { key: internKey } = await platform.admin<{ key: string }>('intern-key', '--intern', await createIntern(platform));
    for (const token of [KEYS.management, internKey, KEYS.carolInactive]) {
      expect((await platform.api(WEBHOOKS, { token })).body).toEqual(refusal(403, 'forbidden'));
      expect((await create(body(), token)).body).toEqual(refusal(403, 'forbidden'));
    }
  });

  it('serves OAuth tokens with the interns scope and answers 403 insufficient_scope without it', async () => {
    const token = async (scope: string) =>
      (await platform.admin<{ access_token: string }>('oauth-token', '--member', 'alice', '--workspace', WS_MAIN, '--scope', scope)).access_token;
    expect((await platform.api(WEBHOOKS, { token: await token('interns') })).status).toBe(200);
    expect((await platform.api(WEBHOOKS, { token: await token('vault:read') })).body).toEqual(refusal(403, 'insufficient_scope'));
  });

  it('serves organization keys, and answers 404 to an organization outside the programme', async () => {
    const created = await create(body(), KEYS.org);
    expect(created.status).toBe(201);
    expect((await platform.api(`${WEBHOOKS}/${created.body.id}`, { method: 'DELETE', token: KEYS.org })).status).toBe(202);
    expect((await platform.api(WEBHOOKS, { token: KEYS.outside })).body).toEqual(refusal(404, 'not_found'));
  });
});

describe('body rules', () => {
  it.each([
    ['an unknown field', { url: 'https://a.example/', events: ['run.completed'], secret: 'mine' }],
    ['no events', { url: 'https://a.example/', events: [] }],
    ['an unknown event type', { url: 'https://a.example/', events: ['run.started'] }],
    ['a repeated event type', { url: 'https://a.example/', events: ['run.failed', 'run.failed'] }],
    ['a URL that is not http(s)', { url: 'ftp://a.example/', events: ['run.failed'] }],
    ['a URL over 2048 characters', { url: `https://a.example/${'x'.repeat(2048)}`, events: ['run.failed'] }],
    ['a description that is not a string', { url: 'https://a.example/', events: ['run.failed'], description: 1 }],
  ])('answers 400 invalid_body for %s', async (_what, json) => {
    expect((await create(json)).body).toEqual(refusal(400, 'invalid_body'));
  });

  it('answers 400 for a body that is not JSON and 415 for another media type', async () => {
    expect((await platform.api(WEBHOOKS, { token: KEYS.alice, raw: '{', headers: { 'content-type': 'application/json' } })).body).toEqual(
      refusal(400, 'invalid_body'),
    );
    expect((await platform.api(WEBHOOKS, { token: KEYS.alice, raw: '{}', headers: { 'content-type': 'text/plain' } })).body).toEqual(
      refusal(415, 'unsupported_media_type'),
    );
  });
});

describe('endpoints', () => {
  it('creates with the one-time secret, lists without it, and keeps each workspace to itself', async () => {
    const created = await create({ url: hookUrl('listed'), events: ['run.completed', 'question.opened'] });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(UUID),
      url: hookUrl('listed'),
      events: ['run.completed', 'question.opened'],
      description: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      created_at: expect.stringMatching(ISO_MS),
    });
    expect(Buffer.from(created.body.secret.slice(6), 'base64')).toHaveLength(32);
    const { secret: _secret, ...listedForm } = created.body;

    const listed = await platform.api(WEBHOOKS, { token: KEYS.bob });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toContainEqual(listedForm);
    for (const endpoint of listed.body.data) expect(Object.keys(endpoint).sort()).toEqual(['created_at', 'description', 'events', 'id', 'url']);

    // Another workspace of the same organization sees nothing of it.
    expect((await platform.api(WEBHOOKS, { token: KEYS.aliceOther })).body).toEqual({ data: [] });
    expect((await deliveries(created.body.id, KEYS.aliceOther)).body).toEqual(refusal(404, 'not_found'));
    const foreignDelete = await platform.api(`${WEBHOOKS}/${created.body.id}`, { method: 'DELETE', token: KEYS.aliceOther });
    expect(foreignDelete.body).toEqual(refusal(404, 'not_found'));
    expect((await deliveries('not-a-uuid')).body).toEqual(refusal(404, 'not_found'));

    const deleted = await platform.api(`${WEBHOOKS}/${created.body.id}`, { method: 'DELETE', token: KEYS.alice });
    expect({ status: deleted.status, body: deleted.body }).toEqual({ status: 202, body: { deleted: true } });
    expect((await platform.api(`${WEBHOOKS}/${created.body.id}`, { method: 'DELETE', token: KEYS.alice })).body).toEqual(refusal(404, 'not_found'));
    expect((await deliveries(created.body.id)).body).toEqual(refusal(404, 'not_found'));
  });
});

describe('deliveries', () => {
  it('delivers every event type it subscribes to, signed, with the contract payload, and logs them', async () => {
    const endpoint = await createEndpoint('all');
    const internId = await createRunningIntern(platform);
    const completedRun = await chatRun(internId, '/say hello');
    await chatRun(internId, '/ask which colour?');
    const failingIntern = await createRunningModelIntern('acme/gpt-x');
    const failedRun = await chatRun(failingIntern, 'hi', false);

    const byType = (type: string) => received('all').filter((request) => payloadOf(request).type === type);
    await eventually(
      async () => received('all'),
      () => byType('run.completed').length > 0 && byType('question.opened').length > 0 && byType('run.failed').length > 0,
      20_000,
    );
    for (const request of received('all')) {
      expectSigned(request, endpoint.secret);
      expect(request.headers['content-type']).toBe('application/json');
      expect(payloadOf(request)).toEqual({
        id: expect.stringMatching(UUID),
        type: expect.any(String),
        created_at: expect.stringMatching(ISO_MS),
        workspace_id: WS_MAIN,
        data: expect.any(Object),
      });
    }
    const statuses = byType('intern.status_changed').filter((request) => payloadOf(request).data.intern_id === internId);
    expect(statuses.map((request) => payloadOf(request).data.status)).toContain('running');
    expect(Object.keys(payloadOf(statuses[0]).data).sort()).toEqual(['intern_id', 'previous_status', 'progress', 'status']);
    const [completed] = byType('run.completed').filter((request) => payloadOf(request).data.run_id === completedRun);
    expect(payloadOf(completed).data).toEqual({
      intern_id: internId,
      run_id: completedRun,
      session_id: expect.stringMatching(UUID),
      origin: 'chat',
      finish_reason: 'stop',
      usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) },
    });
    const [failed] = byType('run.failed').filter((request) => payloadOf(request).data.run_id === failedRun);
    // The integration event's `error` is not part of the contract's payload.
    expect(Object.keys(payloadOf(failed).data).sort()).toEqual(['finish_reason', 'intern_id', 'origin', 'run_id', 'session_id', 'usage']);
    expect(payloadOf(failed).data.finish_reason).toBe('error');
    const [question] = byType('question.opened');
    expect(Object.keys(payloadOf(question).data).sort()).toEqual(['arguments', 'expires_at', 'intern_id', 'run_id', 'session_id', 'tool_call_id']);
    expect(payloadOf(question).data.arguments).toMatchObject({ kind: 'elicitation', message: 'which colour?' });

    const log = await eventually(
      () => deliveries(endpoint.id),
      (answer) => answer.body.data.length === received('all').length && answer.body.data.every((entry: { status: string }) => entry.status === 'delivered'),
    );
    expect(log.status).toBe(200);
    for (const entry of log.body.data) {
      expect(entry).toEqual({
        id: expect.stringMatching(UUID),
        event_type: expect.any(String),
        status: 'delivered',
        attempts: 1,
        last_status_code: 200,
        last_error: null,
        created_at: expect.stringMatching(ISO_MS),
        delivered_at: expect.stringMatching(ISO_MS),
      });
    }
    // The log's ids are the webhook-ids the receiver saw; newest first.
    expect(log.body.data.map((entry: { id: string }) => entry.id).sort()).toEqual(received('all').map((request) => request.headers['webhook-id']).sort());
    const times = log.body.data.map((entry: { created_at: string }) => entry.created_at);
    expect([...times].sort().reverse()).toEqual(times);
  }, 90_000);

  it('retries on the schedule with the same webhook-id, and fails after the last retry', async () => {
    const attemptsSeen = new Map<string, number>();
    behaviour.set('/hook/flaky', (request) => {
      const id = request.headers['webhook-id'] as string;
      attemptsSeen.set(id, (attemptsSeen.get(id) ?? 0) + 1);
      return (attemptsSeen.get(id) ?? 0) < 3 ? 500 : 200;
    });
    behaviour.set('/hook/down', () => 500);
    const flaky = await createEndpoint('flaky', ['run.completed']);
    const down = await createEndpoint('down', ['run.completed']);
    const internId = await createRunningIntern(platform);
    await chatRun(internId, '/say retry me');

    const flakyLog = await eventually(() => deliveries(flaky.id), (answer) => answer.body.data[0]?.status === 'delivered', 15_000);
    expect(flakyLog.body.data).toEqual([
      expect.objectContaining({ event_type: 'run.completed', status: 'delivered', attempts: 3, last_status_code: 200, last_error: null }),
    ]);
    const attempts = received('flaky');
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((request) => request.headers['webhook-id']))).toEqual(new Set([flakyLog.body.data[0].id]));
    expect(new Set(attempts.map((request) => request.body)).size).toBe(1);
    for (const request of attempts) expectSigned(request, flaky.secret);
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[0] - 20);
    expect(attempts[2].at - attempts[1].at).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[1] - 20);

    const downLog = await eventually(() => deliveries(down.id), (answer) => answer.body.data[0]?.status === 'failed', 15_000);
    expect(downLog.body.data).toEqual([
      expect.objectContaining({ status: 'failed', attempts: 3, last_status_code: 500, last_error: 'answered HTTP 500', delivered_at: null }),
    ]);
    await sleep(1000);
    expect(received('down')).toHaveLength(RETRY_SCHEDULE_MS.length + 1);
  }, 60_000);

  it('counts deliveries and attempts, and reports the age of the oldest pending delivery', async () => {
    const metrics = await (await fetch(`${platform.process('webhooks').url}/metrics`)).text();
    expect(metrics).toMatch(/^interns_webhook_deliveries_total\{outcome="delivered"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^interns_webhook_deliveries_total\{outcome="failed"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^interns_webhook_delivery_attempts_total\{result="http_error"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^interns_webhook_oldest_pending_delivery_seconds \d+(\.\d+)?$/m);
  });

  it('stops delivering to an endpoint once it is deleted', async () => {
    const kept = await createEndpoint('kept', ['run.completed']);
    const dropped = await createEndpoint('dropped', ['run.completed']);
    const internId = await createRunningIntern(platform);
    await chatRun(internId, '/say before');
    await eventually(async () => received('dropped').length, (count) => count === 1, 15_000);
    expect((await platform.api(`${WEBHOOKS}/${dropped.id}`, { method: 'DELETE', token: KEYS.alice })).status).toBe(202);

    const after = await chatRun(internId, '/say after');
    await eventually(async () => received('kept').filter((request) => payloadOf(request).data.run_id === after), (found) => found.length === 1, 15_000);
    expect((await deliveries(kept.id)).body.data).toHaveLength(2);
    await sleep(500);
    expect(received('dropped')).toHaveLength(1);
  }, 60_000);

  it('loses nothing when the webhooks process is killed mid-delivery, and duplicates only the delivery in flight', async () => {
    let held = false;
    behaviour.set('/hook/slow', () => {
      if (held) return 200;
      held = true;
      return 'hang';
    });
    const slow = await createEndpoint('slow', ['run.completed']);
    const internId = await createRunningIntern(platform);
    const inFlight = await chatRun(internId, '/say first');
    await eventually(async () => received('slow').length, (count) => count === 1, 15_000);

    await platform.stopService('webhooks', 'SIGKILL');
    const whileDown = [await chatRun(internId, '/say second'), await chatRun(internId, '/say third')];
    await platform.startService('webhooks');

    const log = await eventually(
      () => deliveries(slow.id),
      (answer) => answer.body.data.length === 3 && answer.body.data.every((entry: { status: string }) => entry.status === 'delivered'),
      40_000,
    );
    expect(log.body.data.map((entry: { status: string }) => entry.status)).toEqual(['delivered', 'delivered', 'delivered']);
    const timesSeen = (runId: string) => received('slow').filter((request) => payloadOf(request).data.run_id === runId);
    // The delivery in flight went out again, under the same id; the others once each.
    expect(timesSeen(inFlight)).toHaveLength(2);
    expect(new Set(timesSeen(inFlight).map((request) => request.headers['webhook-id'])).size).toBe(1);
    for (const runId of whileDown) expect(timesSeen(runId)).toHaveLength(1);
    for (const request of received('slow')) expectSigned(request, slow.secret);
  }, 90_000);
});

/** Creates and provisions an intern of `model`, returning its id once it is `running`. */
async function createRunningModelIntern(model: string): Promise<string> {
  const created = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: `wh-${Date.now()}`, model, provision: true } });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.text}`);
  await eventually(
    () => platform.api(`${API}/interns/${created.body.id}`, { token: KEYS.alice }),
    (got) => got.body?.status === 'running',
    20_000,
  );
  return created.body.id;
}
