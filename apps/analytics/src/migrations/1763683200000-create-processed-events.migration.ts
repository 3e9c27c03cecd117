import { MigrationInterface, QueryRunner } from 'typeorm';

/** Event ids already applied to the facts tables: consumers skip redeliveries (JetStream is at-least-once). */
export class CreateProcessedEvents1763683200000 implements MigrationInterface {
  name = 'CreateProcessedEvents1763683200000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE analytics.processed_events (
        event_id uuid PRIMARY KEY,
        processed_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE analytics.processed_events');
  }
}
