import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The read models of the event-sourced sessions. Session ids are strings (chat clients may name their own),
 * so the first, unused `sessions` table (uuid ids) is replaced.
 */
export class SessionsAndRuns1763683300000 implements MigrationInterface {
  name = 'SessionsAndRuns1763683300000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE runs.sessions');
    await runner.query(`
      CREATE TABLE runs.sessions (
        id text PRIMARY KEY,
        intern_id uuid NOT NULL,
        caller_id text NOT NULL,
        origin text NOT NULL CHECK (origin IN ('chat', 'invoke')),
        created_at timestamptz NOT NULL
      )`);
    await runner.query('CREATE INDEX sessions_intern_id_idx ON runs.sessions (intern_id)');
    await runner.query(`
      CREATE TABLE runs.runs (
        id uuid PRIMARY KEY,
        session_id text NOT NULL REFERENCES runs.sessions (id),
        intern_id uuid NOT NULL,
        owner_id text NOT NULL,
        approval_mode text NOT NULL,
        model text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'finished', 'cancelled')),
        finish_reason text,
        prompt_tokens integer NOT NULL DEFAULT 0,
        completion_tokens integer NOT NULL DEFAULT 0,
        started_at timestamptz NOT NULL,
        ended_at timestamptz
      )`);
    await runner.query(`CREATE INDEX runs_active_by_intern_idx ON runs.runs (intern_id) WHERE status = 'active'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE runs.runs');
    await runner.query('DROP TABLE runs.sessions');
    await runner.query(`
      CREATE TABLE runs.sessions (
        id uuid PRIMARY KEY,
        intern_id uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }
}
