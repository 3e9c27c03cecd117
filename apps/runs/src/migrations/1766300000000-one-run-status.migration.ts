import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One status per run: `runs.runs.status` is the status the Run shows (CONTRACT section 12, what `run_status`
 * held), `finish_reason` the finish its readers got (what `run_finish_reason` held), and `end_reason` why it
 * ended (a key of runs-domain's RUN_ENDINGS: `stop`, `length`, `error` or a cancel reason; null while it goes),
 * which the internal record spelled `finished`/`cancelled` and `cancelled:<reason>`. Going runs stay going;
 * ended runs keep their status and finish.
 */
export class OneRunStatus1766300000000 implements MigrationInterface {
  name = 'OneRunStatus1766300000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE runs.runs ADD COLUMN end_reason text');
    await runner.query(`
      UPDATE runs.runs SET
        end_reason = CASE
          WHEN status = 'active' THEN NULL
          WHEN finish_reason LIKE 'cancelled:%' THEN substr(finish_reason, length('cancelled:') + 1)
          ELSE finish_reason END,
        run_status = CASE
          WHEN status = 'active' AND run_status NOT IN ('running', 'awaiting_input') THEN 'running'
          ELSE run_status END`);
    await runner.query('DROP INDEX runs.runs_active_by_intern_idx');
    await runner.query('ALTER TABLE runs.runs DROP COLUMN status, DROP COLUMN finish_reason');
    await runner.query('ALTER TABLE runs.runs RENAME COLUMN run_status TO status');
    await runner.query('ALTER TABLE runs.runs RENAME COLUMN run_finish_reason TO finish_reason');
    await runner.query('ALTER TABLE runs.runs RENAME CONSTRAINT runs_run_status_check TO runs_status_check');
    await runner.query(`CREATE INDEX runs_going_by_intern_idx ON runs.runs (intern_id) WHERE status IN ('running', 'awaiting_input')`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP INDEX runs.runs_going_by_intern_idx');
    await runner.query('ALTER TABLE runs.runs RENAME CONSTRAINT runs_status_check TO runs_run_status_check');
    await runner.query('ALTER TABLE runs.runs RENAME COLUMN finish_reason TO run_finish_reason');
    await runner.query('ALTER TABLE runs.runs RENAME COLUMN status TO run_status');
    await runner.query(`
      ALTER TABLE runs.runs
        ADD COLUMN status text CHECK (status IN ('active', 'finished', 'cancelled')),
        ADD COLUMN finish_reason text`);
    await runner.query(`
      UPDATE runs.runs SET
        status = CASE WHEN end_reason IS NULL THEN 'active' WHEN end_reason IN ('stop', 'length', 'error') THEN 'finished' ELSE 'cancelled' END,
        finish_reason = CASE WHEN end_reason IS NULL OR end_reason IN ('stop', 'length', 'error') THEN end_reason ELSE 'cancelled:' || end_reason END`);
    await runner.query('ALTER TABLE runs.runs ALTER COLUMN status SET NOT NULL, DROP COLUMN end_reason');
    await runner.query(`CREATE INDEX runs_active_by_intern_idx ON runs.runs (intern_id) WHERE status = 'active'`);
  }
}
