import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The vault's secrets (interface section 18), one row per secret of a vault: a workspace's (`vault_id` is the
 * workspace's id) or an intern's own (`vault_id` is the intern's `vault_id`). `sealed` is the value sealed to the
 * vault's public key (lifecycle cannot open it); `digest` a keyed hash of the value, from which each vault's
 * fingerprint is derived (so a copy into another vault gets that vault's fingerprint without the value).
 * `fingerprint_secret` and `digest_secret` (settings) key those hashes.
 */
export class VaultSecrets1700000000600 implements MigrationInterface {
  name = 'VaultSecrets1700000000600';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE lifecycle.vault_secrets (
        vault_id uuid NOT NULL,
        scope text NOT NULL CHECK (scope IN ('workspace', 'intern')),
        name text NOT NULL,
        sealed text NOT NULL,
        digest text NOT NULL,
        fingerprint text NOT NULL,
        hosts text[] NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (vault_id, name)
      )`);
    for (const secret of ['vault_fingerprint_secret', 'vault_digest_secret']) {
      await runner.query(
        `INSERT INTO lifecycle.settings (name, value) VALUES ($1, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))`,
        [secret],
      );
    }
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DELETE FROM lifecycle.settings WHERE name IN ('vault_fingerprint_secret', 'vault_digest_secret')`);
    await runner.query('DROP TABLE lifecycle.vault_secrets');
  }
}
