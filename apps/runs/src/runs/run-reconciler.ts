import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { LeaderLease, type RoundOutcome, WorkerLoop } from '@interns/workers';
import type { RunHost } from './run-host';

const RECONCILER_LOCK: [string, string] = ['run-reconciler', 'runs/orphans'];
/** A run younger than this may still be subscribing to its session on its owner: left alone. */
const START_GRACE_MS = 5_000;

/**
 * Never leaves a run `running` after the replica that ran it died (SIGKILL, a lost node): one replica at a
 * time (a leader lease) probes the session subject of every run recorded as going; a run nobody serves is
 * ended `failed` (`owner_lost`), and its chunk log gets the error and `[DONE]`, so its readers end too. A
 * replica that stops gracefully ends its own runs the same way before it goes.
 */
export class RunReconciler {
  private readonly logger = new Logger('RunReconciler');
  private readonly worker: WorkerLoop;

  constructor(host: RunHost, dataSource: DataSource, intervalMs: number) {
    this.worker = new WorkerLoop({
      name: 'run reconciler',
      lease: new LeaderLease(dataSource, RECONCILER_LOCK),
      pollIntervalMs: intervalMs,
      logger: this.logger,
      round: async (): Promise<RoundOutcome> => {
        const reaped = await host.reapOrphans(null, START_GRACE_MS);
        if (reaped > 0) this.logger.warn(`ended ${reaped} run(s) whose replica is gone`);
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
