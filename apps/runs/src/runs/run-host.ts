import type { DataSource } from 'typeorm';
import type { InternEndsRunsReason } from '@interns/contracts';
import type { SessionChannel } from '@interns/messaging';
import type { LiveRun } from './live-run';
import { type GoingRunRow, OrphanReaper, type OrphanEnding } from './orphan-reaper';
import { RunRegistry } from './run-registry';
import type { RunEnvironment } from './run-spec';
import { type RunStart, RunStarter } from './run-starter';

export type { RunStart } from './run-starter';

/**
 * The runs of this replica as the other services see them: a start (RunStarter, with the per-intern limit), a
 * message to a session's run wherever it runs and this replica's shutdown (RunRegistry), and the ending of runs
 * whose owner is gone or whose intern ends them (OrphanReaper, also the reconciler's round).
 */
export class RunHost {
  readonly registry: RunRegistry;
  readonly reaper: OrphanReaper;
  private readonly starter: RunStarter;

  constructor(env: RunEnvironment, channel: SessionChannel, dataSource: DataSource, limits: { maxRunsPerIntern: number; reconcileIntervalMs: number }) {
    this.registry = new RunRegistry(channel);
    this.reaper = new OrphanReaper(this.registry, env, channel, dataSource, limits.reconcileIntervalMs);
    this.starter = new RunStarter(env, this.registry, this.reaper, limits.maxRunsPerIntern);
  }

  start(start: RunStart): Promise<LiveRun> {
    return this.starter.start(start);
  }

  send(sessionId: string, message: Parameters<SessionChannel['send']>[1]) {
    return this.registry.send(sessionId, message);
  }

  endRunsOf(internId: string, reason: InternEndsRunsReason, correlationId: string): Promise<void> {
    return this.reaper.endRunsOf(internId, reason, correlationId);
  }

  cancelOrphan(row: Pick<GoingRunRow, 'id' | 'session_id' | 'model'>, ending?: OrphanEnding): Promise<void> {
    return this.reaper.cancelOrphan(row, ending);
  }

  shutdown(): Promise<void> {
    return this.registry.shutdown();
  }
}
