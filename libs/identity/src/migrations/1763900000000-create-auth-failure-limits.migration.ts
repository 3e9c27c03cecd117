import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The gateway's authentication failure counters per client address (rate-limiter-flexible's
 * RateLimiterPostgres, like chat_turn_limits): shared by every replica, defined only here.
 */
export class CreateAuthFailureLimits1763900000000 implements MigrationInterface {
  name = 'CreateAuthFailureLimits1763900000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE identity.auth_failure_limits (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      )`);
    await runner.query('CREATE INDEX auth_failure_limits_expire ON identity.auth_failure_limits (expire)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE identity.auth_failure_limits');
  }
}
