import { Logger } from '@nestjs/common';
import { transcriptSweepIntervalMs } from '@interns/contracts';
import { type RoundOutcome, WorkerLoop } from '@interns/workers';
import { QUESTION_PURGE_BATCH, type QuestionPayloadPurger } from './question-payload-purger';

/**
 * Purges the question wording of deliveries recorded longer than TRANSCRIPT_RETENTION_MS ago (CONTRACT section 22).
 * On every replica without a lease, like the delivery worker: each batch takes the rows no other replica holds
 * (SKIP LOCKED), and a full batch is followed by the next at once.
 */
export class QuestionRetentionSweeper {
  private readonly logger = new Logger('TranscriptRetention');
  private readonly worker: WorkerLoop;

  constructor(purger: QuestionPayloadPurger, retentionMs: number) {
    this.worker = new WorkerLoop({
      name: 'question retention',
      pollIntervalMs: transcriptSweepIntervalMs(retentionMs),
      logger: this.logger,
      round: async (): Promise<RoundOutcome> => {
        const purged = await purger.purgeRecordedBefore(retentionMs);
        if (purged > 0) this.logger.log(`purged the question of ${purged} delivery(ies) past TRANSCRIPT_RETENTION_MS`);
        return purged === QUESTION_PURGE_BATCH ? 'more' : 'idle';
      },
    });
  }

  onApplicationBootstrap(): void {
    this.worker.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.worker.stop();
  }
}
