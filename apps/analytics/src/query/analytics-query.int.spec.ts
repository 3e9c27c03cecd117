import type { DataSource } from 'typeorm';
import { type AnalyticsRow } from '@interns/contracts';
import { queryFactsDatabase, type QueryFactsDatabase } from '../testing/query-facts.database';
import { ACME, GLOBEX, insertRunFacts, QUERY_RANGE } from '../testing/run-facts.fixture';
import { AnalyticsQueries } from './analytics-queries';

/**
 * The query over a real database (CONTRACT section 14): totals, dimensions, every operator, each granularity's
 * buckets and the time range. The runs are QUERY_FACTS (see its table); limits, ordering, isolation and
 * refusals are in analytics-query-limits.int.spec.ts.
 */
describe('analytics query', () => {
  let database: QueryFactsDatabase;
  let dataSource: DataSource;
  let queries: AnalyticsQueries;

  beforeAll(async () => {
    database = await queryFactsDatabase('analytics-query.int.spec');
    dataSource = database.dataSource;
    queries = new AnalyticsQueries(dataSource);
  });

  afterAll(async () => {
    await database?.drop();
  });

  /** The rows `body` answers for `organization`, over QUERY_RANGE unless the body names a range. */
  async function rows(body: Record<string, unknown>, organization = ACME): Promise<AnalyticsRow[]> {
    const reply = await queries.answer({ organizationId: organization, query: { time_range: QUERY_RANGE, ...body } });
    expect(reply.data.metadata).toEqual({ query_time_ms: expect.any(Number), row_count: reply.data.data.length, truncated: false });
    return reply.data.data;
  }

  const runCount = async (filters: unknown[]) => (await rows({ metrics: ['run_count'], filters }))[0].run_count;

  describe('totals', () => {
    it('computes every metric over the range', async () => {
      const metrics = ['request_count', 'run_count', 'tokens_prompt', 'tokens_completion', 'tokens_total', 'avg_latency', 'error_rate'];
      // r1-r5: prompts 1+2+1+1+1; tokens of r1, r3, r4; latency of the four that ended; r2 failed of four ended.
      expect(await rows({ metrics })).toEqual([
        { request_count: 6, run_count: 5, tokens_prompt: 31, tokens_completion: 16, tokens_total: 47, avg_latency: 900, error_rate: 0.25 },
      ]);
    });

    it('answers one row of zeros when nothing matches', async () => {
      expect(await rows({ metrics: ['run_count', 'avg_latency', 'error_rate', 'tokens_total'], filters: [{ field: 'model', operator: 'eq', value: 'none' }] })).toEqual([
        { run_count: 0, avg_latency: 0, error_rate: 0, tokens_total: 0 },
      ]);
    });
  });

  describe('dimensions', () => {
    it('groups by one dimension, the first metric descending', async () => {
      expect(await rows({ metrics: ['run_count', 'tokens_total'], dimensions: ['model'] })).toEqual([
        { model: 'm-a', run_count: 3, tokens_total: 15 },
        { model: 'm-b', run_count: 2, tokens_total: 32 },
      ]);
    });

    it('groups by two dimensions, an unset one as null, ties by the dimensions ascending (nulls last)', async () => {
      expect(await rows({ metrics: ['run_count'], dimensions: ['model', 'user'] })).toEqual([
        { model: 'm-a', user: 'alice', run_count: 2 },
        { model: 'm-a', user: 'bob', run_count: 1 },
        { model: 'm-b', user: 'alice', run_count: 1 },
        { model: 'm-b', user: null, run_count: 1 },
      ]);
    });

    it('names every dimension by its catalogue name', async () => {
      const filters = [
        { field: 'intern', operator: 'eq', value: 'i-2' },
        { field: 'workspace', operator: 'eq', value: 'ws-main' },
        { field: 'finish_reason', operator: 'eq', value: 'stop' },
      ];
      const [row] = await rows({ metrics: ['run_count'], dimensions: ['api_key_id', 'origin'], filters });
      expect(row).toEqual({ api_key_id: '42', origin: 'invoke', run_count: 1 });
    });
  });

  describe('filters', () => {
    it.each([
      ['eq', 'model', 'm-a', 3],
      ['neq', 'model', 'm-a', 2],
      ['gt', 'intern', 'i-1', 3],
      ['gte', 'intern', 'i-1', 5],
      ['lt', 'intern', 'i-2', 2],
      ['lte', 'intern', 'i-2', 5],
      ['in', 'user', ['alice', 'bob'], 4],
      ['not_in', 'user', ['alice'], 1],
    ])('%s on %s', async (operator, field, value, expected) => {
      expect(await runCount([{ field, operator, value }])).toBe(expected);
    });

    it('matches unset fields only with include_unset', async () => {
      expect(await runCount([{ field: 'user', operator: 'neq', value: 'alice' }])).toBe(1);
      expect(await runCount([{ field: 'user', operator: 'neq', value: 'alice', include_unset: true }])).toBe(2);
      expect(await runCount([{ field: 'user', operator: 'not_in', value: ['alice', 'bob'], include_unset: true }])).toBe(1);
      expect(await runCount([{ field: 'user', operator: 'eq', value: 'carol', include_unset: true }])).toBe(1);
      expect(await runCount([{ field: 'user', operator: 'eq', value: 'carol', include_unset: false }])).toBe(0);
    });

    it('compares numbers as the text of the dimension, and combines filters with AND', async () => {
      expect(await runCount([{ field: 'api_key_id', operator: 'eq', value: 42 }])).toBe(1);
      expect(await runCount([{ field: 'api_key_id', operator: 'in', value: [41, 42] }])).toBe(1);
      expect(await runCount([{ field: 'model', operator: 'eq', value: 'm-a' }, { field: 'user', operator: 'eq', value: 'alice' }])).toBe(2);
    });

    it('treats SQL in a value as a value', async () => {
      expect(await runCount([{ field: 'model', operator: 'eq', value: "m-a' OR '1'='1" }])).toBe(0);
      expect(await runCount([{ field: 'model', operator: 'in', value: ["m-a') OR (1=1", 'm-b'] }])).toBe(2);
    });
  });

  describe('granularity', () => {
    it('buckets by hour: a run at the hour is in that hour, the last millisecond of a day in its last hour', async () => {
      expect(await rows({ metrics: ['run_count'], granularity: 'hour' })).toEqual([
        { date: '2030-01-01T10:00:00.000Z', run_count: 2 },
        { date: '2030-01-01T11:00:00.000Z', run_count: 1 },
        { date: '2030-01-01T23:00:00.000Z', run_count: 1 },
        { date: '2030-01-02T00:00:00.000Z', run_count: 1 },
      ]);
    });

    it('buckets by minute over 3 hours', async () => {
      const time_range = { start: '2030-01-01T10:00:00Z', end: '2030-01-01T13:00:00Z' };
      expect(await rows({ metrics: ['run_count'], granularity: 'minute', time_range })).toEqual([
        { date: '2030-01-01T10:15:00.000Z', run_count: 1 },
        { date: '2030-01-01T10:45:00.000Z', run_count: 1 },
        { date: '2030-01-01T11:00:00.000Z', run_count: 1 },
      ]);
    });

    it('buckets by day, week (from Monday, before the range starts) and month, in UTC', async () => {
      expect(await rows({ metrics: ['run_count'], granularity: 'day' })).toEqual([
        { date: '2030-01-01T00:00:00.000Z', run_count: 4 },
        { date: '2030-01-02T00:00:00.000Z', run_count: 1 },
      ]);
      expect(await rows({ metrics: ['run_count'], granularity: 'week' })).toEqual([{ date: '2029-12-31T00:00:00.000Z', run_count: 5 }]);
      const time_range = { start: '2029-12-01T00:00:00Z', end: '2030-02-01T00:00:00Z' };
      expect(await rows({ metrics: ['run_count'], granularity: 'month', time_range })).toEqual([{ date: '2030-01-01T00:00:00.000Z', run_count: 6 }]);
    });

    it('puts dimensions and the bucket in each row', async () => {
      expect(await rows({ metrics: ['tokens_total'], dimensions: ['model'], granularity: 'day' })).toEqual([
        { model: 'm-b', date: '2030-01-01T00:00:00.000Z', tokens_total: 32 },
        { model: 'm-a', date: '2030-01-01T00:00:00.000Z', tokens_total: 15 },
        { model: 'm-a', date: '2030-01-02T00:00:00.000Z', tokens_total: 0 },
      ]);
    });
  });

  describe('time range', () => {
    it('includes its start and excludes its end', async () => {
      const time_range = { start: '2030-01-01T11:00:00Z', end: '2030-01-01T23:59:59.999Z' };
      expect(await rows({ metrics: ['run_count'], dimensions: ['intern'], time_range })).toEqual([{ intern: 'i-2', run_count: 1 }]);
    });

    it('defaults to the last 24 hours', async () => {
      const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString();
      await insertRunFacts(dataSource, [
        { organization: GLOBEX, startedAt: hoursAgo(1), model: 'recent' },
        { organization: GLOBEX, startedAt: hoursAgo(23.9), model: 'recent' },
        { organization: GLOBEX, startedAt: hoursAgo(24.1), model: 'recent' },
      ]);
      const reply = await queries.answer({ organizationId: GLOBEX, query: { metrics: ['run_count'], dimensions: ['model'] } });
      expect(reply.data.data).toEqual([{ model: 'recent', run_count: 2 }]);
    });
  });
});
