import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The webhooks schema: endpoints (with their signing secrets), the intern -> workspace map the runs events
 * need (they carry no workspace), the event ids already turned into deliveries, and the deliveries.
 * Ids of other services (workspace, intern) are text: this service stores what the events say.
 */
export class CreateWebhooks1764000000000 implements MigrationInterface {
  name = 'CreateWebhooks1764000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE webhooks.endpoints (
        id uuid PRIMARY KEY,
        workspace_id text NOT NULL,
        url text NOT NULL,
        events text[] NOT NULL,
        description text,
        -- Kept as issued: every delivery is signed with it (HMAC needs the key itself, not a hash).
        secret text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query('CREATE INDEX endpoints_workspace_idx ON webhooks.endpoints (workspace_id, created_at)');
    await runner.query(`
      CREATE TABLE webhooks.intern_workspaces (
        intern_id text PRIMARY KEY,
        workspace_id text NOT NULL
      )`);
    await runner.query(`
      CREATE TABLE webhooks.processed_events (
        event_id uuid PRIMARY KEY,
        processed_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query(`
      CREATE TABLE webhooks.deliveries (
        endpoint_id uuid NOT NULL REFERENCES webhooks.endpoints (id) ON DELETE CASCADE,
        event_id uuid NOT NULL,
        event_type text NOT NULL,
        -- The exact bytes signed and sent on every attempt.
        payload text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        -- Attempts started; a claim counts one before the request goes out.
        attempts integer NOT NULL DEFAULT 0,
        -- Pending: when the next attempt is due; while an attempt is in flight, when its claim lapses.
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_status_code integer,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        delivered_at timestamptz,
        PRIMARY KEY (endpoint_id, event_id)
      )`);
    await runner.query("CREATE INDEX deliveries_due_idx ON webhooks.deliveries (next_attempt_at) WHERE status = 'pending'");
    await runner.query('CREATE INDEX deliveries_log_idx ON webhooks.deliveries (endpoint_id, created_at DESC)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE webhooks.deliveries');
    await runner.query('DROP TABLE webhooks.processed_events');
    await runner.query('DROP TABLE webhooks.intern_workspaces');
    await runner.query('DROP TABLE webhooks.endpoints');
  }
}
