import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateSessions1763683200000 implements MigrationInterface {
  name = 'CreateSessions1763683200000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE runs.sessions (
        id uuid PRIMARY KEY,
        intern_id uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query('CREATE INDEX sessions_intern_id_idx ON runs.sessions (intern_id)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE runs.sessions');
  }
}
