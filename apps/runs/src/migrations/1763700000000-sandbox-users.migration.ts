import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One host uid per intern for its sandbox: SANDBOX_UID_BASE + ordinal. An ordinal is never reused (rows stay
 * when the intern is deleted), so a uid never passes from one intern to another.
 */
export class SandboxUsers1763700000000 implements MigrationInterface {
  name = 'SandboxUsers1763700000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE runs.sandbox_users (
        intern_id uuid PRIMARY KEY,
        ordinal integer GENERATED ALWAYS AS IDENTITY UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE runs.sandbox_users');
  }
}
