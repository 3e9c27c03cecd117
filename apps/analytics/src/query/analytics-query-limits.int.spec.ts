import type { DataSource } from 'typeorm';
import { type AnalyticsQueryReply, DomainError } from '@interns/contracts';
import { queryFactsDatabase, type QueryFactsDatabase } from '../testing/query-facts.database';
import { ACME, GLOBEX, QUERY_FACTS, QUERY_RANGE } from '../testing/run-facts.fixture';
import { AnalyticsQueries } from './analytics-queries';

/**
 * The query's limits, ordering, tenant isolation and refusals over a real database, on a database whose time zone
 * is not UTC (buckets must not follow it). The runs are QUERY_FACTS (see its table).
 */
describe('analytics query: limits, order, isolation, refusals', () => {
  let database: QueryFactsDatabase;
  let dataSource: DataSource;
  let queries: AnalyticsQueries;

  beforeAll(async () => {
    database = await queryFactsDatabase('analytics-query-limits.int.spec', { timezone: 'Asia/Kolkata' });
    dataSource = database.dataSource;
    queries = new AnalyticsQueries(dataSource);
  });

  afterAll(async () => {
    await database?.drop();
  });

  function answer(body: Record<string, unknown>, organization = ACME): Promise<AnalyticsQueryReply> {
    return queries.answer({ organizationId: organization, query: { time_range: QUERY_RANGE, ...body } });
  }

  const rowsOf = async (body: Record<string, unknown>, organization = ACME) => (await answer(body, organization)).data.data;

  it('buckets in UTC whatever the session time zone', async () => {
    const [zone] = await dataSource.query('SHOW timezone');
    expect(zone.TimeZone).toBe('Asia/Kolkata');
    expect(await rowsOf({ metrics: ['run_count'], granularity: 'day' })).toEqual([
      { date: '2030-01-01T00:00:00.000Z', run_count: 4 },
      { date: '2030-01-02T00:00:00.000Z', run_count: 1 },
    ]);
  });

  describe('limit', () => {
    const byModelAndUser = { metrics: ['run_count'], dimensions: ['model', 'user'] };

    it('says truncated when the limit cut rows, and keeps the first rows of the order', async () => {
      const reply = await answer({ ...byModelAndUser, limit: 2 });
      expect(reply.data).toEqual({
        data: [
          { model: 'm-a', user: 'alice', run_count: 2 },
          { model: 'm-a', user: 'bob', run_count: 1 },
        ],
        metadata: { query_time_ms: expect.any(Number), row_count: 2, truncated: true },
      });
    });

    it('is not truncated when the rows fit exactly', async () => {
      const reply = await answer({ ...byModelAndUser, limit: 4 });
      expect(reply.data.metadata).toEqual({ query_time_ms: expect.any(Number), row_count: 4, truncated: false });
    });

    it('cuts buckets too', async () => {
      const reply = await answer({ metrics: ['run_count'], granularity: 'hour', limit: 3 });
      expect(reply.data.data.map((row) => row.date)).toEqual(['2030-01-01T10:00:00.000Z', '2030-01-01T11:00:00.000Z', '2030-01-01T23:00:00.000Z']);
      expect(reply.data.metadata.truncated).toBe(true);
    });
  });

  describe('group_limit', () => {
    it('keeps the groups with the most of the first metric over the whole range, in every bucket', async () => {
      expect(await rowsOf({ metrics: ['run_count'], dimensions: ['model'], granularity: 'day', group_limit: 1 })).toEqual([
        { model: 'm-a', date: '2030-01-01T00:00:00.000Z', run_count: 2 },
        { model: 'm-a', date: '2030-01-02T00:00:00.000Z', run_count: 1 },
      ]);
    });

    it('ranks by the order_by metric or dimension with its direction', async () => {
      const byTokens = await rowsOf({ metrics: ['run_count', 'tokens_total'], dimensions: ['model'], order_by: { field: 'tokens_total', direction: 'desc' }, group_limit: 1 });
      expect(byTokens).toEqual([{ model: 'm-b', run_count: 2, tokens_total: 32 }]);
      const fewest = await rowsOf({ metrics: ['run_count'], dimensions: ['intern'], order_by: { field: 'run_count', direction: 'asc' }, group_limit: 1 });
      expect(fewest).toEqual([{ intern: 'i-1', run_count: 2 }]);
      const lastModel = await rowsOf({ metrics: ['run_count'], dimensions: ['model'], granularity: 'day', order_by: { field: 'model', direction: 'desc' }, group_limit: 1 });
      expect(lastModel).toEqual([{ model: 'm-b', date: '2030-01-01T00:00:00.000Z', run_count: 2 }]);
    });

    it('counts an unset dimension as a group of its own', async () => {
      const users = await rowsOf({ metrics: ['run_count'], dimensions: ['user', 'model'], order_by: { field: 'run_count', direction: 'asc' }, group_limit: 4 });
      expect(users).toEqual([
        { user: 'alice', model: 'm-b', run_count: 1 },
        { user: 'bob', model: 'm-a', run_count: 1 },
        { user: null, model: 'm-b', run_count: 1 },
        { user: 'alice', model: 'm-a', run_count: 2 },
      ]);
      const top3 = await rowsOf({ metrics: ['run_count'], dimensions: ['user', 'model'], order_by: { field: 'run_count', direction: 'asc' }, group_limit: 3 });
      expect(top3).toEqual(users.slice(0, 3));
    });

    it('changes nothing without dimensions', async () => {
      expect(await rowsOf({ metrics: ['run_count'], group_limit: 1 })).toEqual([{ run_count: 5 }]);
    });
  });

  describe('order_by', () => {
    it('orders by a metric, a dimension or the bucket, either way', async () => {
      const byModel = { metrics: ['run_count', 'tokens_total'], dimensions: ['model'] };
      expect((await rowsOf({ ...byModel, order_by: { field: 'tokens_total', direction: 'desc' } })).map((row) => row.model)).toEqual(['m-b', 'm-a']);
      expect((await rowsOf({ ...byModel, order_by: { field: 'run_count', direction: 'asc' } })).map((row) => row.model)).toEqual(['m-b', 'm-a']);
      expect((await rowsOf({ ...byModel, order_by: { field: 'model', direction: 'desc' } })).map((row) => row.model)).toEqual(['m-b', 'm-a']);
      const hours = await rowsOf({ metrics: ['run_count'], granularity: 'hour', order_by: { field: 'date', direction: 'desc' } });
      expect(hours.map((row) => row.date)).toEqual(['2030-01-02T00:00:00.000Z', '2030-01-01T23:00:00.000Z', '2030-01-01T11:00:00.000Z', '2030-01-01T10:00:00.000Z']);
    });
  });

  describe('tenant isolation', () => {
    it("counts only the key's organization's runs", async () => {
      const all = { metrics: ['run_count', 'tokens_total'], dimensions: ['intern'] };
      expect(await rowsOf(all, GLOBEX)).toEqual([{ intern: 'i-9', run_count: 1, tokens_total: 2000 }]);
      expect((await rowsOf(all, ACME)).map((row) => row.intern)).toEqual(['i-2', 'i-1']);
      const filtered = await rowsOf({ metrics: ['run_count'], filters: [{ field: 'intern', operator: 'in', value: ['i-9', 'i-unknown'] }] }, ACME);
      expect(filtered).toEqual([{ run_count: 0 }]);
      expect(await rowsOf({ metrics: ['run_count'] }, 'initech')).toEqual([{ run_count: 0 }]);
    });
  });

  describe('refusals', () => {
    async function refusal(query: unknown): Promise<string> {
      const error = await queries.answer({ organizationId: ACME, query }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(DomainError);
      expect((error as DomainError).reason).toBe('invalid_body');
      return (error as DomainError).message;
    }

    it('checks the query again: no name from a message reaches SQL', async () => {
      expect(await refusal({ metrics: ['run_count'], dimensions: ['model; DROP TABLE analytics.run_facts'] })).toBe(
        'dimensions[0]: unknown dimension "model; DROP TABLE analytics.run_facts"',
      );
      expect(await refusal({ metrics: ['count(*)); DROP TABLE analytics.run_facts; --'] })).toContain('metrics[0]: unknown metric');
      expect(await refusal({ metrics: ['run_count'], filters: [{ field: 'model) OR (1=1', operator: 'eq', value: 'x' }] })).toContain(
        'filters[0].field: unknown filter field',
      );
      expect(await refusal({ metrics: ['run_count'], filters: [{ field: 'model', operator: '= ANY', value: 'x' }] })).toContain('unknown operator');
      expect(await refusal({ metrics: ['run_count'], granularity: "hour', started_at) --" })).toContain('unknown granularity');
      expect(await refusal({ metrics: ['run_count'], order_by: { field: '1; DROP TABLE x', direction: 'asc' } })).toContain('order_by.field');
      expect(await refusal({ metrics: ['run_count'], order_by: { field: 'run_count', direction: 'asc; DROP TABLE x' } })).toContain('order_by.direction');
      expect(await refusal(undefined)).toBe('body must be a JSON object');
      const [{ count }] = await dataSource.query('SELECT count(*)::int AS count FROM analytics.run_facts');
      expect(count).toBe(QUERY_FACTS.length);
    });

    it('refuses a request without an organization as an internal error', async () => {
      await expect(queries.answer({ query: { metrics: ['run_count'] } })).rejects.not.toBeInstanceOf(DomainError);
    });
  });
});
