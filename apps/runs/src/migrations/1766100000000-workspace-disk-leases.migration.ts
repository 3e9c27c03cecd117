import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Which runs process has an intern's workspace image mounted (WORKSPACE_DISK=image): an ext4 image mounted by
 * two hosts at once is corrupted, so a process mounts one only while it holds its lease, renewed while mounted.
 */
export class WorkspaceDiskLeases1766100000000 implements MigrationInterface {
  name = 'WorkspaceDiskLeases1766100000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE runs.workspace_disk_leases (
        intern_id uuid PRIMARY KEY,
        holder uuid NOT NULL,
        renewed_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE runs.workspace_disk_leases');
  }
}
