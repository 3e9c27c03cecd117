import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An intern's egress allow list (interface section 19), projected from `EgressPolicyChanged` like the rest of the
 * intern's state. Interns from before it have no such event: their list is empty, which is the default.
 */
export class InternEgressPolicy1700000000700 implements MigrationInterface {
  name = 'InternEgressPolicy1700000000700';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE lifecycle.interns ADD COLUMN egress_allow text[] NOT NULL DEFAULT '{}'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE lifecycle.interns DROP COLUMN egress_allow');
  }
}
