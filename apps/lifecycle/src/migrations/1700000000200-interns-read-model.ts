import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Read model and side tables of the intern aggregate. Name uniqueness ("same creator in the workspace")
 * is a unique index on the read model, which is projected inside the append transaction, so two racing
 * creates cannot both commit. Creator-less interns (organization keys) share the '' creator.
 */
export class InternsReadModel1700000000200 implements MigrationInterface {
  name = 'InternsReadModel1700000000200';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE lifecycle.interns (
        id uuid PRIMARY KEY,
        organization_id text NOT NULL,
        workspace_id uuid NOT NULL,
        created_by text NULL,
        name text NOT NULL,
        description text NULL,
        instructions text NULL,
        model text NULL,
        status text NOT NULL,
        last_failure_message text NULL,
        progress jsonb NULL,
        hostname text NULL,
        vault_id uuid NOT NULL,
        attached_vault_id uuid NULL,
        icon_sha256 text NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        revision int NOT NULL
      )`);
    await runner.query(
      `CREATE UNIQUE INDEX interns_name_per_creator ON lifecycle.interns (workspace_id, (coalesce(created_by, '')), name)`,
    );
    await runner.query(
      `CREATE INDEX interns_workspace_newest ON lifecycle.interns (workspace_id, created_at DESC, id DESC)`,
    );
    await runner.query(`CREATE INDEX interns_vault ON lifecycle.interns (vault_id)`);
    await runner.query(`
      CREATE TABLE lifecycle.icons (
        intern_id uuid PRIMARY KEY,
        sha256 text NOT NULL,
        png bytea NOT NULL
      )`);
    await runner.query(`
      CREATE TABLE lifecycle.vaults (
        id uuid PRIMARY KEY,
        owner_intern_id uuid NOT NULL,
        workspace_id uuid NOT NULL,
        created_at timestamptz NOT NULL
      )`);
    await runner.query(`
      CREATE TABLE lifecycle.idempotency_keys (
        caller text NOT NULL,
        workspace_id uuid NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        intern_id uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, caller, key)
      )`);
    // Shared by every replica: signs list cursors so they are tamper-evident.
    await runner.query(`CREATE TABLE lifecycle.settings (name text PRIMARY KEY, value text NOT NULL)`);
    await runner.query(
      `INSERT INTO lifecycle.settings (name, value)
       VALUES ('cursor_secret', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))`,
    );
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['settings', 'idempotency_keys', 'vaults', 'icons', 'interns']) {
      await runner.query(`DROP TABLE lifecycle.${table}`);
    }
  }
}
