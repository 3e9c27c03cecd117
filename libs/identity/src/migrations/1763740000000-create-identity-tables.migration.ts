import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateIdentityTables1763740000000 implements MigrationInterface {
  name = 'CreateIdentityTables1763740000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('CREATE SCHEMA IF NOT EXISTS identity');
    await runner.query(`
      CREATE TABLE identity.organizations (
        id text PRIMARY KEY,
        name text NOT NULL,
        programme boolean NOT NULL,
        lifecycle_writes boolean NOT NULL,
        chatapp_install_required boolean NOT NULL DEFAULT false,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query(`
      CREATE TABLE identity.workspaces (
        id uuid PRIMARY KEY,
        organization_id text NOT NULL REFERENCES identity.organizations (id),
        name text NOT NULL,
        chatapp_installed_at timestamptz NULL
      )`);
    await runner.query(`
      CREATE TABLE identity.members (
        id text PRIMARY KEY,
        organization_id text NOT NULL REFERENCES identity.organizations (id),
        active boolean NOT NULL
      )`);
    // Each kind's bindings are enforced here too, so no writer can store a key the resolver would misread.
    await runner.query(`
      CREATE TABLE identity.api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        key_hash text NOT NULL UNIQUE,
        kind text NOT NULL CHECK (kind IN ('user', 'organization', 'management', 'intern')),
        organization_id text NOT NULL REFERENCES identity.organizations (id),
        workspace_id uuid NULL REFERENCES identity.workspaces (id),
        member_id text NULL REFERENCES identity.members (id),
        intern_id uuid NULL,
        disabled boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT api_keys_member_only_on_user_keys CHECK ((kind = 'user') = (member_id IS NOT NULL)),
        CONSTRAINT api_keys_intern_only_on_intern_keys CHECK ((kind = 'intern') = (intern_id IS NOT NULL)),
        CONSTRAINT api_keys_workspace_required CHECK (kind = 'management' OR workspace_id IS NOT NULL)
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE identity.api_keys');
    await runner.query('DROP TABLE identity.members');
    await runner.query('DROP TABLE identity.workspaces');
    await runner.query('DROP TABLE identity.organizations');
  }
}
