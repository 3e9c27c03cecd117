import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A session append as one statement (issue 29): `runs.append_session` claims the stream version and inserts the
 * events (`runs.append_events`, appendFunctionMigration), writes the read model rows the projection computed
 * (`runs.apply_session_rows`) and, for a run start, takes the intern's lock, checks that nothing halted the intern
 * since runs last asked lifecycle about it (`runs.intern_halts`) and counts its going runs against
 * MAX_RUNS_PER_INTERN: one round trip and one commit instead of five or seven.
 *
 * Refusals are raised with SQLSTATEs of their own (class R0, unused by PostgreSQL): R0001 the intern was halted,
 * R0002 the intern's runs are all taken (session-appends.ts maps them). The statement then rolls back whole.
 */
export class SessionAppends1766400000000 implements MigrationInterface {
  name = 'SessionAppends1766400000000';

  async up(runner: QueryRunner): Promise<void> {
    // Bumped (under the intern's lock) each time lifecycle ends an intern's runs: a start checks it has not moved
    // since it looked the intern up, so a suspend or delete that ended the runs is never outrun by a cached lookup.
    await runner.query(`CREATE TABLE runs.intern_halts (intern_id uuid PRIMARY KEY, seq bigint NOT NULL)`);
    await runner.query(`
      CREATE FUNCTION runs.halt_intern(p_intern_id uuid) RETURNS bigint LANGUAGE plpgsql AS $$
      DECLARE
        bumped bigint;
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('runs:intern:' || p_intern_id::text, 0));
        INSERT INTO runs.intern_halts AS h (intern_id, seq) VALUES (p_intern_id, 1)
          ON CONFLICT (intern_id) DO UPDATE SET seq = h.seq + 1
          RETURNING h.seq INTO bumped;
        RETURN bumped;
      END
      $$`);
    // One write of the read model per element: {op: 'session' | 'run', ...columns} inserts (once), {op: 'update',
    // id, revision, set} changes the columns `set` names on a run whose revision is older (a replay changes nothing).
    await runner.query(`
      CREATE FUNCTION runs.apply_session_rows(p_rows jsonb) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE
        r jsonb;
        s jsonb;
      BEGIN
        FOR r IN SELECT * FROM jsonb_array_elements(p_rows) LOOP
          IF r->>'op' = 'session' THEN
            INSERT INTO runs.sessions (id, intern_id, caller_id, origin, created_at)
              VALUES (r->>'id', (r->>'intern_id')::uuid, r->>'caller_id', r->>'origin', (r->>'created_at')::timestamptz)
              ON CONFLICT (id) DO NOTHING;
          ELSIF r->>'op' = 'run' THEN
            INSERT INTO runs.runs (id, session_id, intern_id, owner_id, approval_mode, model, status, finish_reason,
                started_at, origin, caller_id, revision)
              VALUES ((r->>'id')::uuid, r->>'session_id', (r->>'intern_id')::uuid, r->>'owner_id', r->>'approval_mode',
                r->>'model', r->>'status', r->>'finish_reason', (r->>'started_at')::timestamptz, r->>'origin',
                r->>'caller_id', (r->>'revision')::integer)
              ON CONFLICT (id) DO NOTHING;
          ELSIF r->>'op' = 'update' THEN
            s := r->'set';
            UPDATE runs.runs SET
                status = CASE WHEN s ? 'status' THEN s->>'status' ELSE status END,
                finish_reason = CASE WHEN s ? 'finish_reason' THEN s->>'finish_reason' ELSE finish_reason END,
                end_reason = CASE WHEN s ? 'end_reason' THEN s->>'end_reason' ELSE end_reason END,
                ended_at = CASE WHEN s ? 'ended_at' THEN (s->>'ended_at')::timestamptz ELSE ended_at END,
                open_question = CASE WHEN s ? 'open_question' THEN NULLIF(s->'open_question', 'null'::jsonb) ELSE open_question END,
                prompt_tokens = CASE WHEN s ? 'prompt_tokens' THEN (s->>'prompt_tokens')::integer ELSE prompt_tokens END,
                completion_tokens = CASE WHEN s ? 'completion_tokens' THEN (s->>'completion_tokens')::integer ELSE completion_tokens END,
                usage_reported = CASE WHEN s ? 'usage_reported' THEN (s->>'usage_reported')::boolean ELSE usage_reported END,
                revision = (r->>'revision')::integer
              WHERE id = (r->>'id')::uuid AND revision < (r->>'revision')::integer;
          ELSE
            RAISE EXCEPTION 'unknown session row op %', r->>'op';
          END IF;
        END LOOP;
      END
      $$`);
    // p_start: null, or {intern_id, halt_seq, max_runs, going_statuses} for an append that starts a run (going_statuses
    // unused since GoingRunsCount1766500000000).
    await runner.query(appendSessionFunction('CREATE FUNCTION', GOING_FROM_START_ARGUMENT));
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP FUNCTION runs.append_session(text, text, integer, jsonb, jsonb, jsonb)');
    await runner.query('DROP FUNCTION runs.apply_session_rows(jsonb)');
    await runner.query('DROP FUNCTION runs.halt_intern(uuid)');
    await runner.query('DROP TABLE runs.intern_halts');
  }
}

/** How the first version counted a run as going: by the statuses the start passed (`going_statuses`). */
export const GOING_FROM_START_ARGUMENT = "r.status IN (SELECT jsonb_array_elements_text(p_start->'going_statuses'))";

/**
 * The statement that makes `runs.append_session`, counting the intern's going runs where `goingRun` holds (over
 * `runs.runs r`). Shared by this migration and GoingRunsCount1766500000000, which changed only that condition.
 */
export function appendSessionFunction(create: 'CREATE FUNCTION' | 'CREATE OR REPLACE FUNCTION', goingRun: string): string {
  return `
      ${create} runs.append_session(p_stream_id text, p_stream_type text, p_expected integer, p_events jsonb,
          p_rows jsonb, p_start jsonb)
        RETURNS TABLE (global_position text, transaction_id text, stream_version integer, created_at timestamptz)
        LANGUAGE plpgsql AS $$
      DECLARE
        intern uuid := (p_start->>'intern_id')::uuid;
        going integer;
      BEGIN
        IF p_start IS NOT NULL THEN
          -- Concurrent starts of one intern queue here, so each one's count below sees every earlier committed start.
          PERFORM pg_advisory_xact_lock(hashtextextended('runs:intern:' || intern::text, 0));
          IF coalesce((SELECT h.seq FROM runs.intern_halts h WHERE h.intern_id = intern), 0) <> (p_start->>'halt_seq')::bigint THEN
            RAISE EXCEPTION 'the intern was halted since it was looked up' USING ERRCODE = 'R0001';
          END IF;
        END IF;
        RETURN QUERY SELECT * FROM runs.append_events(p_stream_id, p_stream_type, p_expected, p_events);
        IF NOT FOUND THEN
          RETURN;
        END IF;
        PERFORM runs.apply_session_rows(p_rows);
        IF p_start IS NOT NULL THEN
          SELECT count(*) INTO going FROM runs.runs r
            WHERE r.intern_id = intern AND ${goingRun};
          IF going > (p_start->>'max_runs')::integer THEN
            RAISE EXCEPTION 'the intern has all its runs going' USING ERRCODE = 'R0002';
          END IF;
        END IF;
      END
      $$`;
}
