import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Transcript retention (CONTRACT section 22): a run remembers when its transcript was purged (its events' text
 * blanked, its chunks gone), and the retention sweep finds the ended runs still to purge, oldest end first,
 * without reading the rest.
 */
export class TranscriptRetention1766000000000 implements MigrationInterface {
  name = 'TranscriptRetention1766000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE runs.runs ADD COLUMN transcript_purged_at timestamptz');
    await runner.query(
      'CREATE INDEX runs_transcript_due_idx ON runs.runs (ended_at) WHERE transcript_purged_at IS NULL AND ended_at IS NOT NULL',
    );
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP INDEX runs.runs_transcript_due_idx');
    await runner.query('ALTER TABLE runs.runs DROP COLUMN transcript_purged_at');
  }
}
