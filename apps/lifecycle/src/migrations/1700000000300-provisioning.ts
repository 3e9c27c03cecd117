import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the provisioning process manager reads: `queue_position` orders `queued` interns (the global position
 * of their provision request, so the oldest request goes first), `runtime_active` marks interns whose runtime
 * may be up (set from provisioning step 3 on, cleared once it was stopped). Chat-app installs recorded per
 * workspace decide whether a provision has to wait in `awaiting_chatapp_install`.
 */
export class Provisioning1700000000300 implements MigrationInterface {
  name = 'Provisioning1700000000300';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE lifecycle.interns ADD COLUMN queue_position bigint NULL`);
    await runner.query(`ALTER TABLE lifecycle.interns ADD COLUMN runtime_active boolean NOT NULL DEFAULT false`);
    // The process manager polls for work several times a second; only interns with work are indexed.
    await runner.query(`
      CREATE INDEX interns_pending_work ON lifecycle.interns (status, queue_position)
       WHERE status IN ('queued', 'awaiting_chatapp_install', 'provisioning', 'destroying') OR runtime_active`);
    await runner.query(`
      CREATE TABLE lifecycle.chatapp_installs (
        workspace_id uuid PRIMARY KEY,
        recorded_at timestamptz NOT NULL
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE lifecycle.chatapp_installs`);
    await runner.query(`DROP INDEX lifecycle.interns_pending_work`);
    await runner.query(`ALTER TABLE lifecycle.interns DROP COLUMN runtime_active`);
    await runner.query(`ALTER TABLE lifecycle.interns DROP COLUMN queue_position`);
  }
}
