import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The door (interface section 20). Hostnames are looked up on every door request whose answer is not cached: an
 * index keeps that one row read. The nonces of v2 signatures the door accepted live here, one row each until the
 * signature's timestamp leaves its window, so a nonce is used once across every gateway replica: the primary key
 * makes the claim atomic.
 */
export class Door1700000000800 implements MigrationInterface {
  name = 'Door1700000000800';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE INDEX interns_hostname ON lifecycle.interns (hostname) WHERE hostname IS NOT NULL`);
    await runner.query(`
      CREATE TABLE lifecycle.daemon_nonces (
        nonce text PRIMARY KEY,
        expires_at timestamptz NOT NULL
      )`);
    await runner.query(`CREATE INDEX daemon_nonces_expiry ON lifecycle.daemon_nonces (expires_at)`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE lifecycle.daemon_nonces`);
    await runner.query(`DROP INDEX lifecycle.interns_hostname`);
  }
}
