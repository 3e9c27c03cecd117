import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Transcript retention (CONTRACT section 22): a `question.opened` delivery quotes the model's question, so its
 * payload is purged with the transcript (its intern deleted, or TRANSCRIPT_RETENTION_MS past). It records when,
 * and the two partial indexes find the deliveries still to purge by intern and by age.
 */
export class QuestionTranscriptRetention1766000000000 implements MigrationInterface {
  name = 'QuestionTranscriptRetention1766000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE webhooks.deliveries ADD COLUMN transcript_purged_at timestamptz');
    await runner.query(
      `CREATE INDEX deliveries_questions_by_intern_idx ON webhooks.deliveries (((payload::jsonb) -> 'data' ->> 'intern_id'))
        WHERE event_type = 'question.opened' AND transcript_purged_at IS NULL`,
    );
    await runner.query(
      `CREATE INDEX deliveries_questions_by_age_idx ON webhooks.deliveries (created_at)
        WHERE event_type = 'question.opened' AND transcript_purged_at IS NULL`,
    );
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP INDEX webhooks.deliveries_questions_by_age_idx');
    await runner.query('DROP INDEX webhooks.deliveries_questions_by_intern_idx');
    await runner.query('ALTER TABLE webhooks.deliveries DROP COLUMN transcript_purged_at');
  }
}
