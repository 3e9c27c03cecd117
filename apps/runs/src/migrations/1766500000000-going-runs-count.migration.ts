import { MigrationInterface, QueryRunner } from 'typeorm';
import { appendSessionFunction, GOING_FROM_START_ARGUMENT } from './1766400000000-session-appends.migration';

/**
 * A run start's count of the intern's going runs, as the partial index `runs_going_by_intern_idx` (OneRunStatus)
 * can serve it. The first `runs.append_session` took the going statuses from its argument (`status IN (SELECT
 * jsonb_array_elements_text(...))`): the planner cannot prove that condition implies the index's predicate, so it
 * counted by scanning every run the intern ever had (about 17 ms at 100 000 runs, under the intern's advisory lock,
 * on every start). The statuses are now the index's own literals; GOING_RUN_STATUSES must name the same ones
 * (going-runs-count.migration.int.spec.ts checks the function, the index and the constant agree).
 */
export const GOING_RUN_CONDITION = "r.status IN ('running', 'awaiting_input')";

export class GoingRunsCount1766500000000 implements MigrationInterface {
  name = 'GoingRunsCount1766500000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(appendSessionFunction('CREATE OR REPLACE FUNCTION', GOING_RUN_CONDITION));
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(appendSessionFunction('CREATE OR REPLACE FUNCTION', GOING_FROM_START_ARGUMENT));
  }
}
