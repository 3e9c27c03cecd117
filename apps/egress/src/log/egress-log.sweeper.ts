import { Logger } from '@nestjs/common';
import { transcriptSweepIntervalMs } from '@interns/contracts';
import { type RoundOutcome, WorkerLoop } from '@interns/workers';
import { EGRESS_LOG_PURGE_BATCH, type EgressLogStore } from './egress-log.store';

/**
 * Deletes egress log entries older than EGRESS_LOG_RETENTION_MS (interface section 19), a batch per round, on every
 * replica: two replicas deleting the same old rows is harmless.
 */
export class EgressLogSweeper {
  private readonly logger = new Logger('EgressLogRetention');
  private readonly worker: WorkerLoop;

  constructor(store: EgressLogStore, retentionMs: number) {
    this.worker = new WorkerLoop({
      name: 'egress log retention',
      pollIntervalMs: transcriptSweepIntervalMs(retentionMs),
      logger: this.logger,
      round: async (): Promise<RoundOutcome> => {
        const purged = await store.purgeOlderThan(retentionMs);
        if (purged > 0) this.logger.log(`deleted ${purged} egress log entr(ies) past EGRESS_LOG_RETENTION_MS`);
        return purged === EGRESS_LOG_PURGE_BATCH ? 'more' : 'idle';
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
