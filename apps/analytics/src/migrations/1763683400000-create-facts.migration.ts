import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The facts analytics keeps, filled from the lifecycle and runs integration events. Events of different
 * streams arrive in no particular order (two streams, several replicas, redeliveries), so every column is
 * written by exactly one kind of event, or guarded by the source stream version, and the joined columns
 * (a run's intern, caller and workspace) are filled by whichever side arrives second.
 * Ids are text: analytics stores what the events say and never rejects an event over an id's shape.
 */
export class CreateFacts1763683400000 implements MigrationInterface {
  name = 'CreateFacts1763683400000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE analytics.intern_facts (
        intern_id text PRIMARY KEY,
        organization_id text,
        workspace_id text,
        created_by text,
        created_at timestamptz,
        name text,
        name_version integer,
        model text,
        model_version integer,
        status text,
        status_version integer,
        status_at timestamptz,
        destroyed_at timestamptz
      )`);
    await runner.query(`
      CREATE TABLE analytics.intern_status_changes (
        event_id uuid PRIMARY KEY,
        intern_id text NOT NULL,
        stream_version integer NOT NULL,
        status text NOT NULL,
        at timestamptz NOT NULL
      )`);
    await runner.query(
      'CREATE INDEX intern_status_changes_intern_idx ON analytics.intern_status_changes (intern_id, stream_version)',
    );
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
    await runner.query(`
      CREATE TABLE analytics.run_facts (
        run_id text PRIMARY KEY,
        session_id text NOT NULL,
        intern_id text,
        workspace_id text,
        organization_id text,
        caller_id text,
        user_id text,
        api_key_id text,
        origin text,
        model text,
        approval_mode text,
        prompt_count integer NOT NULL DEFAULT 0,
        finish_reason text,
        error_reason text,
        cancel_reason text,
        prompt_tokens integer,
        completion_tokens integer,
        total_tokens integer GENERATED ALWAYS AS (prompt_tokens + completion_tokens) STORED,
        started_at timestamptz,
        ended_at timestamptz,
        latency_ms bigint GENERATED ALWAYS AS ((extract(epoch FROM (ended_at - started_at)) * 1000)::bigint) STORED
      )`);
    await runner.query('CREATE INDEX run_facts_started_at_idx ON analytics.run_facts (started_at)');
    await runner.query('CREATE INDEX run_facts_session_idx ON analytics.run_facts (session_id)');
    await runner.query('CREATE INDEX run_facts_intern_idx ON analytics.run_facts (intern_id)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE analytics.run_facts');
    await runner.query('DROP TABLE analytics.session_facts');
    await runner.query('DROP TABLE analytics.intern_status_changes');
    await runner.query('DROP TABLE analytics.intern_facts');
  }
}
