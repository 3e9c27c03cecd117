import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Since analytics reads the public integration events, every run event carries the run's intern, session and
 * origin, and `run.started` its caller as `user_id` / `api_key_id`: the session facts that joined runs to
 * their caller, and the runs service's caller format, are no longer kept.
 */
export class RunFactsFromIntegrationEvents1763900000000 implements MigrationInterface {
  name = 'RunFactsFromIntegrationEvents1763900000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE analytics.session_facts');
    await runner.query('ALTER TABLE analytics.run_facts DROP COLUMN caller_id');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE analytics.run_facts ADD COLUMN caller_id text');
    await runner.query(`
      CREATE TABLE analytics.session_facts (
        session_id text PRIMARY KEY,
        intern_id text NOT NULL,
        caller_id text NOT NULL,
        user_id text,
        api_key_id text,
        origin text NOT NULL,
        opened_at timestamptz NOT NULL
      )`);
    await runner.query('CREATE INDEX session_facts_intern_idx ON analytics.session_facts (intern_id)');
  }
}
