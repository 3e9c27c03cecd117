import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Terminals attached to interns (interface section 20), one row per terminal while it is open, whichever replica
 * holds it: TERMINALS_PER_INTERN is counted here, and suspend and delete find every replica's terminals here.
 */
export class TerminalSessions1766200000000 implements MigrationInterface {
  name = 'TerminalSessions1766200000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE runs.terminal_sessions (
        id uuid PRIMARY KEY,
        intern_id uuid NOT NULL,
        member_id text NOT NULL,
        opened_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query('CREATE INDEX terminal_sessions_intern ON runs.terminal_sessions (intern_id)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE runs.terminal_sessions');
  }
}
