/**
 * End to end: `POST /api/v1/analytics/query` (CONTRACT sections 2, 9 and 14) through the gateway, NATS and the
 * analytics service: the management-key rules before the body rules, every class of 400 in the analytics shape
 * (no metadata), a real chat run counted from its integration events, and isolation between two organizations'
 * management keys over facts written to the platform's database.
 */
import { randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import {
  API,
  createRunningIntern,
  eventually,
  IDENTITIES,
  KEYS,
  prompt,
  query,
  readStream,
} from '@interns/testing/e2e';

const QUERY = `${API}/analytics/query`;
const GLOBEX_KEY = 'mk_globex';
const RANGE = { start: '2030-01-01T00:00:00Z', end: '2030-01-02T00:00:00Z' };

let platform: Platform;

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities({
    ...IDENTITIES,
    organizations: [...IDENTITIES.organizations, { id: 'globex', name: 'Globex', programme: true, lifecycle_writes: true }],
    api_keys: [...IDENTITIES.api_keys, { key: GLOBEX_KEY, kind: 'management', organization_id: 'globex' }],
  });
  // Two organizations' runs in the same hours (2030, so no real run of the tests falls among them).
  for (const [organization, model, hour, tokens] of [
    ['acme', 'm-a', '10', 10],
    ['acme', 'm-a', '11', 20],
    ['acme', 'm-b', '11', 30],
    ['globex', 'm-g', '10', 1000],
  ] as const) {
    await query(
      platform,
      `INSERT INTO analytics.run_facts (run_id, session_id, intern_id, organization_id, model, origin, finish_reason,
         prompt_tokens, completion_tokens, started_at, ended_at)
       VALUES ($1, $1, 'i-1', $2, $3, 'chat', 'stop', $4, 0, $5, $5)`,
      [randomUUID(), organization, model, tokens, `2030-01-01T${hour}:30:00Z`],
    );
  }
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

/** `token` null: no Authorization header. */
function post(body: unknown, token: string | null = KEYS.management) {
  return platform.api(QUERY, { method: 'POST', token: token ?? undefined, json: body });
}

const badRequest = (message: string) => ({ error: { code: 400, message } });

describe('POST /analytics/query: who may ask', () => {
  it('answers 401 "missing authentication header" without an Authorization header, before looking at the body', async () => {
    const response = await post({ nonsense: true }, null);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: { code: 401, message: 'missing authentication header' } });
  });

  it('answers 401 to an unknown key and 403 to any credential that is not a management key', async () => {
    expect((await post({ metrics: ['run_count'] }, 'mk_nobody')).body).toEqual({ error: { code: 401, message: 'invalid or missing API key' } });
    for (const credential of [KEYS.alice, KEYS.org, KEYS.outside]) {
      const response = await post({ nonsense: true }, credential);
      expect({ credential, status: response.status, body: response.body }).toEqual({
        credential,
        status: 403,
        body: { error: { code: 403, message: 'only management keys may do this' } },
      });
    }
  });
});

describe('POST /analytics/query: answers', () => {
  it('answers the rows and their metadata', async () => {
    const response = await post({ metrics: ['run_count', 'tokens_total'], dimensions: ['model'], granularity: 'hour', time_range: RANGE });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.body).toEqual({
      data: {
        data: [
          { model: 'm-a', date: '2030-01-01T10:00:00.000Z', run_count: 1, tokens_total: 10 },
          { model: 'm-a', date: '2030-01-01T11:00:00.000Z', run_count: 1, tokens_total: 20 },
          { model: 'm-b', date: '2030-01-01T11:00:00.000Z', run_count: 1, tokens_total: 30 },
        ],
        metadata: { query_time_ms: expect.any(Number), row_count: 3, truncated: false },
      },
    });
  });

  it("counts only the key's organization's runs", async () => {
    const body = { metrics: ['run_count', 'tokens_total'], time_range: RANGE, filters: [{ field: 'intern', operator: 'eq', value: 'i-1' }] };
    expect((await post(body)).body.data.data).toEqual([{ run_count: 3, tokens_total: 60 }]);
    expect((await post(body, GLOBEX_KEY)).body.data.data).toEqual([{ run_count: 1, tokens_total: 1000 }]);
    const models = await post({ metrics: ['run_count'], dimensions: ['model'], time_range: RANGE }, GLOBEX_KEY);
    expect(models.body.data.data).toEqual([{ model: 'm-g', run_count: 1 }]);
  });

  it('says truncated when the limit cut rows', async () => {
    const response = await post({ metrics: ['run_count'], granularity: 'hour', time_range: RANGE, limit: 1 });
    expect(response.body.data).toEqual({
      data: [{ date: '2030-01-01T10:00:00.000Z', run_count: 1 }],
      metadata: { query_time_ms: expect.any(Number), row_count: 1, truncated: true },
    });
  });

  it('counts a real chat run from its integration events', async () => {
    const internId = await createRunningIntern(platform);
    const summary = await readStream(await prompt(platform, internId, '/say counted'));
    const body = { metrics: ['run_count', 'request_count', 'tokens_total'], dimensions: ['origin', 'user'], filters: [{ field: 'intern', operator: 'eq', value: internId }] };
    const rows = await eventually(
      async () => (await post(body)).body.data.data,
      (data: unknown[]) => data.length === 1 && (data[0] as { tokens_total: number }).tokens_total > 0,
      15_000,
    );
    expect(rows).toEqual([{ origin: 'chat', user: 'alice', run_count: 1, request_count: 1, tokens_total: summary.usage?.total_tokens }]);
  }, 60_000);
});

describe('POST /analytics/query: refusals', () => {
  it.each([
    ['an empty body', undefined, 'body must be a JSON object'],
    ['a body that is not an object', ['run_count'], 'body must be a JSON object'],
    ['an unknown field', { metrics: ['run_count'], organization_id: 'globex' }, 'unknown field: organization_id'],
    ['no metric', { metrics: [] }, 'metrics: name at least one metric'],
    ['an unknown metric', { metrics: ['cost'] }, 'metrics[0]: unknown metric "cost"'],
    ['an unknown dimension', { metrics: ['run_count'], dimensions: ['model; DROP TABLE analytics.run_facts'] }, 'dimensions[0]: unknown dimension "model; DROP TABLE analytics.run_facts"'],
    ['three dimensions', { metrics: ['run_count'], dimensions: ['model', 'intern', 'user'] }, 'dimensions: at most 2 dimensions'],
    ['21 filters', { metrics: ['run_count'], filters: Array(21).fill({ field: 'model', operator: 'eq', value: 'x' }) }, 'filters: at most 20 filters'],
    ['an unknown filter field', { metrics: ['run_count'], filters: [{ field: 'organization_id', operator: 'eq', value: 'globex' }] }, 'filters[0].field: unknown filter field "organization_id"'],
    ['an unknown operator', { metrics: ['run_count'], filters: [{ field: 'model', operator: 'like', value: 'x' }] }, 'filters[0].operator: unknown operator "like"'],
    ['a list for a scalar operator', { metrics: ['run_count'], filters: [{ field: 'model', operator: 'eq', value: ['x'] }] }, 'filters[0].value: operator "eq" takes one string or number'],
    ['an unknown granularity', { metrics: ['run_count'], granularity: 'year' }, 'granularity: unknown granularity "year"'],
    ['minute over a day', { metrics: ['run_count'], granularity: 'minute', time_range: RANGE }, 'granularity: minute needs a time_range of 3 hours or less'],
    ['a time without seconds', { metrics: ['run_count'], time_range: { start: '2030-01-01T00:00Z', end: RANGE.end } }, 'time_range.start: must be an ISO 8601 UTC timestamp with seconds, such as 2030-01-31T00:00:00Z'],
    ['a backwards range', { metrics: ['run_count'], time_range: { start: RANGE.end, end: RANGE.start } }, 'time_range: start must be before end'],
    ['order_by a field not requested', { metrics: ['run_count'], order_by: { field: 'model', direction: 'asc' } }, 'order_by.field: "model" is not a requested metric or dimension'],
    ['a limit over 10000', { metrics: ['run_count'], limit: 10001 }, 'limit: limit must be an integer 1-10000'],
    ['a group_limit of 0', { metrics: ['run_count'], group_limit: 0 }, 'group_limit: group_limit must be an integer 1-10000'],
  ])('answers 400 to %s, without metadata', async (_label, body, message) => {
    const response = await post(body);
    expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: badRequest(message) });
  });

  it('answers 400 to malformed JSON and 415 to a body that is not JSON', async () => {
    const malformed = await platform.api(QUERY, { method: 'POST', token: KEYS.management, raw: '{"metrics":', headers: { 'content-type': 'application/json' } });
    expect(malformed.body).toEqual(badRequest('body is not valid JSON'));
    const text = await platform.api(QUERY, { method: 'POST', token: KEYS.management, raw: 'metrics=run_count', headers: { 'content-type': 'text/plain' } });
    expect(text.body).toEqual({ error: { code: 415, message: 'Content-Type must be application/json' } });
  });
});
