import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { transcriptSweepIntervalMs } from '@interns/contracts';
import { LeaderLease, type RoundOutcome, WorkerLoop } from '@interns/workers';
import { TRANSCRIPT_PURGE_BATCH, type TranscriptPurger } from './transcript-purger';

const SWEEPER_LOCK: [string, string] = ['transcript-retention', 'runs/transcripts'];

/**
 * Purges the transcripts of runs that ended longer than TRANSCRIPT_RETENTION_MS ago (CONTRACT section 22): one
 * runs replica at a time (a leader lease), one batch of runs per round, and straight on to the next batch while
 * a round found a full one, so a backlog goes in short transactions and nothing of it is held in memory.
 */
export class TranscriptRetentionSweeper {
  private readonly logger = new Logger('TranscriptRetention');
  private readonly worker: WorkerLoop;

  constructor(purger: TranscriptPurger, dataSource: DataSource, retentionMs: number) {
    this.worker = new WorkerLoop({
      name: 'transcript retention',
      lease: new LeaderLease(dataSource, SWEEPER_LOCK),
      pollIntervalMs: transcriptSweepIntervalMs(retentionMs),
      logger: this.logger,
      round: async (): Promise<RoundOutcome> => {
        const purged = await purger.purgeEndedBefore(retentionMs);
        if (purged > 0) this.logger.log(`purged the transcripts of ${purged} run(s) past TRANSCRIPT_RETENTION_MS`);
        if (purged === TRANSCRIPT_PURGE_BATCH) return 'more';
        // Once the runs are done: the questions and failures published about them (usually one look, at a young one).
        const deleted = await purger.purgeIntegrationEventsBefore(retentionMs);
        if (deleted > 0) this.logger.log(`deleted ${deleted} integration event(s) quoting transcripts past TRANSCRIPT_RETENTION_MS`);
        return 'idle';
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
