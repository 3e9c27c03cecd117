/**
 * A run start counts the intern's going runs through the partial index `runs_going_by_intern_idx`, not by scanning
 * every run the intern ever had: `runs.append_session` uses the index's own condition, and the function, the index and
 * GOING_RUN_STATUSES name the same statuses.
 */
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { GOING_RUN_STATUSES } from '@interns/runs-domain';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { GOING_RUN_CONDITION } from './1766500000000-going-runs-count.migration';
import { RUNS_MIGRATIONS, RUNS_SCHEMA } from './index';

/** The quoted statuses of an `IN ('a', 'b')` list in `text`, sorted. */
function statusesIn(text: string): string[] {
  const list = /status IN \(([^)]*)\)/i.exec(text)?.[1] ?? '';
  return [...list.matchAll(/'([^']+)'/g)].map((match) => match[1]).sort();
}

/** Every plan node of an EXPLAIN (FORMAT JSON) answer. */
function planNodes(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [plan, ...children.flatMap(planNodes)];
}

describe('the going-runs count of a run start', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  const internId = randomUUID();

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: RUNS_SCHEMA, migrations: RUNS_MIGRATIONS, applicationName: 'going-runs-count.int.spec', migrate: true });
    await dataSource.query(`INSERT INTO runs.sessions (id, intern_id, caller_id, origin, created_at) VALUES ('s-1', $1, 'member:alice', 'chat', now())`, [internId]);
    // A long history: thousands of ended runs, one going.
    await dataSource.query(
      `INSERT INTO runs.runs (id, session_id, intern_id, owner_id, approval_mode, model, status, finish_reason, started_at, origin, caller_id, revision)
       SELECT gen_random_uuid(), 's-1', $1, 'owner-1', 'manual', 'm', CASE WHEN n = 1 THEN 'running' ELSE 'completed' END,
              CASE WHEN n = 1 THEN NULL ELSE 'stop' END, now() - make_interval(secs => n), 'chat', 'member:alice', 1
         FROM generate_series(1, 5000) AS n`,
      [internId],
    );
    await dataSource.query('ANALYZE runs.runs');
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('names the same going statuses in the function, the partial index and GOING_RUN_STATUSES', async () => {
    const [{ definition }]: { definition: string }[] = await dataSource.query(
      `SELECT pg_get_functiondef('runs.append_session(text, text, integer, jsonb, jsonb, jsonb)'::regprocedure) AS definition`,
    );
    const [{ indexdef }]: { indexdef: string }[] = await dataSource.query(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = 'runs' AND indexname = 'runs_going_by_intern_idx'`,
    );
    expect(definition).toContain(GOING_RUN_CONDITION);
    expect(statusesIn(GOING_RUN_CONDITION)).toEqual([...GOING_RUN_STATUSES].sort());
    // PostgreSQL prints the index predicate as `status = ANY (ARRAY['running'::text, ...])`.
    expect([...indexdef.matchAll(/'([^']+)'::text/g)].map((match) => match[1]).sort()).toEqual([...GOING_RUN_STATUSES].sort());
  });

  it('counts through the partial index, without reading the ended runs', async () => {
    const [{ 'QUERY PLAN': [explained] }]: { 'QUERY PLAN': { Plan: Record<string, unknown> }[] }[] = await dataSource.query(
      `EXPLAIN (FORMAT JSON) SELECT count(*) FROM runs.runs r WHERE r.intern_id = $1 AND ${GOING_RUN_CONDITION}`,
      [internId],
    );
    const indexes = planNodes(explained.Plan).map((node) => node['Index Name']).filter((name) => name !== undefined);
    expect(indexes).toEqual(['runs_going_by_intern_idx']);
  });

  it('still refuses a start beyond the cap and lets one within it pass (the count itself)', async () => {
    const start = (maxRuns: number) =>
      dataSource.query('SELECT * FROM runs.append_session($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb)', [
        `session-${randomUUID()}`,
        'session',
        0,
        JSON.stringify([{ stream_version: 1, event_id: randomUUID(), type: 'Noted', schema_version: 1, data: {}, metadata: {} }]),
        '[]',
        JSON.stringify({ intern_id: internId, halt_seq: 0, max_runs: maxRuns }),
      ]);
    // One run is going, and this start adds no run row: a cap of 0 refuses it, a cap of 1 lets it through.
    await expect(start(0)).rejects.toMatchObject({ code: 'R0002' });
    await expect(start(1)).resolves.toHaveLength(1);
  });
});
