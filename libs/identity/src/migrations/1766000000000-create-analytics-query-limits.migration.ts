import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The gateway's analytics query budget per organization (rate-limiter-flexible's RateLimiterPostgres, built with
 * `tableCreated: true`): the columns that library reads and writes, UNLOGGED like the other counters (after a
 * PostgreSQL crash an organization may get one more minute's budget once).
 */
export class CreateAnalyticsQueryLimits1766000000000 implements MigrationInterface {
  name = 'CreateAnalyticsQueryLimits1766000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE UNLOGGED TABLE identity.analytics_query_limits (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      )`);
    await runner.query('CREATE INDEX analytics_query_limits_expire ON identity.analytics_query_limits (expire)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE identity.analytics_query_limits');
  }
}
