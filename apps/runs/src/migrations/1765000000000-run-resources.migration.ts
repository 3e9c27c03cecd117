import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Runs as resources (CONTRACT section 12): `runs.runs` gains what the Run object shows (its origin, who started
 * it, its status, finish and open question as a reader sees them) and the session stream version it was last
 * projected from (`revision`: a replayed or repeated event never moves a row back). `status` and
 * `finish_reason` stay the internal record (active/finished/cancelled, `cancelled:<reason>`). The run list
 * pages newest first per intern; its cursors are signed with a secret every replica shares.
 */
export class RunResources1765000000000 implements MigrationInterface {
  name = 'RunResources1765000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE runs.runs
        ADD COLUMN origin text,
        ADD COLUMN caller_id text,
        ADD COLUMN run_status text,
        ADD COLUMN run_finish_reason text,
        ADD COLUMN open_question jsonb,
        ADD COLUMN usage_reported boolean NOT NULL DEFAULT false,
        ADD COLUMN revision integer NOT NULL DEFAULT 0`);
    // Runs recorded before: the session's origin and caller, their status from the internal record.
    await runner.query(`UPDATE runs.runs r SET origin = s.origin, caller_id = s.caller_id FROM runs.sessions s WHERE s.id = r.session_id`);
    await runner.query(`
      UPDATE runs.runs SET
        run_status = CASE
          WHEN status = 'active' THEN 'running'
          WHEN status = 'finished' AND finish_reason = 'error' THEN 'failed'
          WHEN status = 'finished' THEN 'completed'
          WHEN finish_reason = 'cancelled:interaction_deadline' THEN 'expired'
          WHEN finish_reason IN ('cancelled:owner_lost', 'cancelled:execution_deadline') THEN 'failed'
          ELSE 'cancelled' END,
        run_finish_reason = CASE
          WHEN status = 'active' THEN NULL
          WHEN status = 'finished' THEN finish_reason
          WHEN finish_reason IN ('cancelled:caller_cancelled', 'cancelled:client_disconnected') THEN 'stop'
          ELSE 'error' END,
        usage_reported = prompt_tokens + completion_tokens > 0`);
    await runner.query(`
      ALTER TABLE runs.runs
        ALTER COLUMN origin SET NOT NULL,
        ALTER COLUMN caller_id SET NOT NULL,
        ALTER COLUMN run_status SET NOT NULL,
        ADD CONSTRAINT runs_origin_check CHECK (origin IN ('chat', 'invoke')),
        ADD CONSTRAINT runs_run_status_check
          CHECK (run_status IN ('running', 'awaiting_input', 'completed', 'failed', 'cancelled', 'expired'))`);
    await runner.query('CREATE INDEX runs_by_intern_newest_idx ON runs.runs (intern_id, started_at DESC, id DESC)');
    await runner.query(`CREATE INDEX runs_open_questions_idx ON runs.runs (intern_id, started_at) WHERE open_question IS NOT NULL`);
    await runner.query(`CREATE TABLE runs.settings (name text PRIMARY KEY, value text NOT NULL)`);
    await runner.query(
      `INSERT INTO runs.settings (name, value)
       VALUES ('cursor_secret', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))`,
    );
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE runs.settings');
    await runner.query('DROP INDEX runs.runs_open_questions_idx');
    await runner.query('DROP INDEX runs.runs_by_intern_newest_idx');
    await runner.query(`
      ALTER TABLE runs.runs
        DROP COLUMN origin, DROP COLUMN caller_id, DROP COLUMN run_status, DROP COLUMN run_finish_reason,
        DROP COLUMN open_question, DROP COLUMN usage_reported, DROP COLUMN revision`);
  }
}
