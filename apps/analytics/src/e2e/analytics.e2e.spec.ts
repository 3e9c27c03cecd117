/**
 * End to end: analytics (CONTRACT sections 2 and 9). `GET /analytics/meta` for every credential kind with
 * exact bodies, errors without metadata, and the facts the analytics service keeps from the runs' integration
 * events, including runs that happened while analytics was down.
 */
import { Platform } from '@interns/testing';
import {
  API,
  createIntern,
  createRunningIntern,
  eventually,
  IDENTITIES,
  KEYS,
  prompt,
  query,
  readStream,
  WS_MAIN,
} from '@interns/testing/e2e';

const META = `${API}/analytics/meta`;

/** The whole 200 body, written out: the contract's shape, not the implementation's catalogue. */
const META_BODY = {
  data: {
    dimensions: [
      { name: 'model', display_label: 'Model' },
      { name: 'intern', display_label: 'Intern' },
      { name: 'workspace', display_label: 'Workspace' },
      { name: 'api_key_id', display_label: 'API Key' },
      { name: 'user', display_label: 'User' },
      { name: 'origin', display_label: 'Origin' },
      { name: 'finish_reason', display_label: 'Finish Reason' },
    ],
    granularities: [
      { name: 'minute', display_label: 'Minute' },
      { name: 'hour', display_label: 'Hour' },
      { name: 'day', display_label: 'Day' },
      { name: 'week', display_label: 'Week' },
      { name: 'month', display_label: 'Month' },
    ],
    metrics: [
      { name: 'request_count', display_label: 'Request Count', is_rate: false, display_format: 'number' },
      { name: 'run_count', display_label: 'Run Count', is_rate: false, display_format: 'number' },
      { name: 'tokens_prompt', display_label: 'Prompt Tokens', is_rate: false, display_format: 'number' },
      { name: 'tokens_completion', display_label: 'Completion Tokens', is_rate: false, display_format: 'number' },
      { name: 'tokens_total', display_label: 'Total Tokens', is_rate: false, display_format: 'number' },
      { name: 'avg_latency', display_label: 'Average Latency', is_rate: false, display_format: 'latency' },
      { name: 'error_rate', display_label: 'Error Rate', is_rate: true, display_format: 'percent' },
    ],
    operators: [
      { name: 'eq', value_type: 'scalar' },
      { name: 'neq', value_type: 'scalar' },
      { name: 'gt', value_type: 'scalar' },
      { name: 'gte', value_type: 'scalar' },
      { name: 'lt', value_type: 'scalar' },
      { name: 'lte', value_type: 'scalar' },
      { name: 'in', value_type: 'array' },
      { name: 'not_in', value_type: 'array' },
    ],
  },
};

const MISSING_HEADER = { error: { code: 401, message: 'missing authentication header' } };
const UNAUTHENTICATED = { error: { code: 401, message: 'invalid or missing API key' } };
const MANAGEMENT_ONLY = { error: { code: 403, message: 'only management keys may do this' } };

interface RunFact {
  run_id: string;
  intern_id: string | null;
  workspace_id: string | null;
  organization_id: string | null;
  user_id: string | null;
  api_key_id: string | null;
  origin: string | null;
  model: string | null;
  finish_reason: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  prompt_count: number;
  latency_ms: string | null;
}

let platform: Platform;
let internId: string;

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities(IDENTITIES);
  internId = await createRunningIntern(platform);
});

afterAll(async () => {
  await platform?.stop();
});

function meta(headers: Record<string, string> = {}) {
  return platform.api(META, { headers });
}

const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });

/** The session's one run fact, once it has ended. */
function runFactOf(sessionId: string, timeoutMs = 10_000): Promise<RunFact> {
  return eventually(
    () => query<RunFact>(platform, 'SELECT * FROM analytics.run_facts WHERE session_id = $1', [sessionId]),
    (rows) => rows.length === 1 && rows[0].finish_reason !== null && rows[0].workspace_id !== null,
    timeoutMs,
  ).then((rows) => rows[0]);
}

describe('GET /analytics/meta', () => {
  it('answers a management key with the catalogue', async () => {
    const response = await meta(bearer(KEYS.management));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.body).toEqual(META_BODY);
  });

  it('answers 401 "missing authentication header" without an Authorization header', async () => {
    const response = await meta();
    expect(response.status).toBe(401);
    expect(response.body).toEqual(MISSING_HEADER);
  });

  it.each([
    ['an unknown key', bearer('mk_nobody')],
    ['a disabled key', bearer(KEYS.disabled)],
    ['a non-bearer scheme', { authorization: `Basic ${KEYS.management}` }],
    ['a JWT with a bad signature', bearer('eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhbGljZSJ9.c2ln')],
  ])('answers 401 for %s', async (_label, headers) => {
    const response = await meta(headers);
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHENTICATED);
  });

  it('answers 403 to every other valid credential: user, organization, intern keys and OAuth tokens', async () => {
    const { key: internKey } = await platform.admin<{ key: string }>('intern-key', '--intern', await createIntern(platform));
    const { access_token: token } = await platform.admin<{ access_token: string }>(
      'oauth-token', '--member', 'alice', '--workspace', WS_MAIN, '--scope', 'interns vault:read',
    );
    for (const credential of [KEYS.alice, KEYS.carolInactive, KEYS.org, KEYS.outside, internKey, token]) {
      const response = await meta(bearer(credential));
      expect({ credential, status: response.status, body: response.body }).toEqual({ credential, status: 403, body: MANAGEMENT_ONLY });
    }
  });

  it('answers unknown analytics routes 404 without metadata', async () => {
    for (const [method, path] of [
      ['GET', `${API}/analytics/nope`],
      ['POST', META],
    ]) {
      const response = await platform.api(path, { method, headers: bearer(KEYS.management) });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: { code: 404, message: 'not found' } });
    }
  });
});

describe('run facts', () => {
  it('records a chat run with its tokens, caller, intern and workspace', async () => {
    const summary = await readStream(await prompt(platform, internId, '/say hello analytics'));
    expect(summary.usage).not.toBeNull();
    const fact = await runFactOf(summary.sessionId);
    expect(fact).toMatchObject({
      intern_id: internId,
      workspace_id: WS_MAIN,
      organization_id: 'acme',
      user_id: 'alice',
      api_key_id: null,
      origin: 'chat',
      model: 'local/scripted',
      finish_reason: 'stop',
      prompt_count: 1,
      prompt_tokens: summary.usage?.prompt_tokens,
      completion_tokens: summary.usage?.completion_tokens,
      total_tokens: summary.usage?.total_tokens,
    });
    expect(Number(fact.latency_ms)).toBeGreaterThanOrEqual(0);
  });

  it('records an invoke run of an organization key under that key', async () => {
    const started = await platform.api(`${API}/interns/${internId}/invoke`, { token: KEYS.org, json: { input: '/say invoked' } });
    expect(started.status).toBeLessThan(300);
    const fact = await runFactOf(started.body.session_id);
    expect(fact).toMatchObject({ origin: 'invoke', user_id: null, finish_reason: 'stop', intern_id: internId });
    expect(fact.api_key_id).toEqual(expect.any(String));
  });

  it('loses no run that happened while analytics was down', async () => {
    await platform.stopService('analytics');
    const down = await meta(bearer(KEYS.management));
    expect(down.status).toBe(500);
    expect(down.body).toEqual({ error: { code: 500, message: expect.any(String) } });

    const summary = await readStream(await prompt(platform, internId, '/say while analytics sleeps'));
    // Committed in runs, hence relayed; nothing consumes it yet.
    await eventually(
      () => query(platform, "SELECT 1 FROM runs.events WHERE stream_id = $1 AND type = 'RunFinished'", [`session-${summary.sessionId}`]),
      (rows) => rows.length === 1,
    );
    expect(await query(platform, 'SELECT 1 FROM analytics.run_facts WHERE session_id = $1', [summary.sessionId])).toEqual([]);

    await platform.startService('analytics');
    const fact = await runFactOf(summary.sessionId);
    expect(fact).toMatchObject({ finish_reason: 'stop', total_tokens: summary.usage?.total_tokens, user_id: 'alice' });
    expect((await meta(bearer(KEYS.management))).body).toEqual(META_BODY);
  });
});
