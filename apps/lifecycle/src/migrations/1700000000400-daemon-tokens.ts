import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revealed daemon tokens, kept only as SHA-256 hashes with their intern, member and expiry. Rows go when the
 * intern is suspended or deleted (inline projection) and, once expired, when the intern's next token is issued.
 */
export class DaemonTokens1700000000400 implements MigrationInterface {
  name = 'DaemonTokens1700000000400';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE lifecycle.daemon_tokens (
        token_sha256 text PRIMARY KEY,
        intern_id uuid NOT NULL,
        member_id text NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL
      )`);
    await runner.query(`CREATE INDEX daemon_tokens_intern ON lifecycle.daemon_tokens (intern_id)`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE lifecycle.daemon_tokens`);
  }
}
