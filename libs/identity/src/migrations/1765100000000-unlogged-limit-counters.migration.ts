import { MigrationInterface, QueryRunner } from 'typeorm';

const COUNTER_TABLES = ['identity.chat_turn_limits', 'identity.auth_failure_limits'];

/**
 * The gateway's rate-limit counters become UNLOGGED: their writes skip the WAL, so a counted chat turn (on
 * the turn's critical path) no longer waits for a WAL flush at commit (about 0.35 ms of 0.75 per upsert on
 * the benchmark machine). The price, accepted: after a PostgreSQL crash or a failover to a standby the
 * counters start again from zero, i.e. a caller may get up to one more minute's budget once. Counters are
 * per minute and hold nothing else.
 */
export class UnloggedLimitCounters1765100000000 implements MigrationInterface {
  name = 'UnloggedLimitCounters1765100000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const table of COUNTER_TABLES) await runner.query(`ALTER TABLE ${table} SET UNLOGGED`);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of COUNTER_TABLES) await runner.query(`ALTER TABLE ${table} SET LOGGED`);
  }
}
