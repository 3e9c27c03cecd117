import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The egress schema: the service's settings (the key its secrets' placeholders are derived with, the key its log
 * cursors are signed with) and the egress log (interface section 19), one row per request the proxy handled.
 * Intern and run ids are text: this service stores what runs told it. `seq` orders entries of one intern.
 */
export class CreateEgress1767000000000 implements MigrationInterface {
  name = 'CreateEgress1767000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE egress.settings (
        name text PRIMARY KEY,
        value text NOT NULL
      )`);
    await runner.query(`
      INSERT INTO egress.settings (name, value) VALUES
        ('placeholder_secret', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')),
        ('cursor_secret', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))`);
    await runner.query(`
      CREATE TABLE egress.log (
        seq bigserial PRIMARY KEY,
        id uuid NOT NULL UNIQUE,
        intern_id text NOT NULL,
        run_id text,
        at timestamptz NOT NULL,
        host text NOT NULL,
        port integer NOT NULL,
        method text,
        path text,
        decision text NOT NULL CHECK (decision IN ('allowed', 'denied')),
        reason text,
        secrets text[] NOT NULL,
        status integer,
        bytes_out bigint NOT NULL,
        bytes_in bigint NOT NULL
      )`);
    await runner.query('CREATE INDEX log_intern_idx ON egress.log (intern_id, seq DESC)');
    await runner.query('CREATE INDEX log_at_idx ON egress.log (at)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE egress.log');
    await runner.query('DROP TABLE egress.settings');
  }
}
