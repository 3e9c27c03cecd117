import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The gateway's chat turn limiter counters (rate-limiter-flexible's RateLimiterPostgres). The columns are
 * exactly the ones that library reads and writes; it is built with `tableCreated: true`, so this migration
 * is the only place the table is defined and no replica issues DDL at runtime.
 */
export class CreateChatTurnLimits1763800000000 implements MigrationInterface {
  name = 'CreateChatTurnLimits1763800000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE identity.chat_turn_limits (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      )`);
    // The library deletes rows expired an hour ago every few minutes; the index keeps that sweep cheap.
    await runner.query('CREATE INDEX chat_turn_limits_expire ON identity.chat_turn_limits (expire)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE identity.chat_turn_limits');
  }
}
