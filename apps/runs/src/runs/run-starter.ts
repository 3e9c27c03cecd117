import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { DomainError } from '@interns/contracts';
import { eventMetadata } from '@interns/event-store';
import { GOING_RUN_STATUSES } from '@interns/runs-domain';
import type { SessionCommand, SessionOrigin } from '@interns/runs-domain';
import { LiveRun } from './live-run';
import type { OrphanReaper } from './orphan-reaper';
import type { RunRegistry } from './run-registry';
import type { RunEnvironment, RunSpec } from './run-spec';

/** What starting a run needs besides what the starter mints (run id, owner). */
export type RunStart = Omit<RunSpec, 'runId'> & {
  /** Open the session in the same append (a new session). */
  openSession: boolean;
};

/**
 * Starts runs on this replica: records the start (MAX_RUNS_PER_INTERN is checked in the same transaction), then
 * lets the run go, held by the registry. An intern whose runs are all taken may have some left behind by a
 * replica that died: those are reaped once and the start is tried again.
 */
export class RunStarter {
  constructor(
    private readonly env: RunEnvironment,
    private readonly registry: RunRegistry,
    private readonly reaper: OrphanReaper,
    private readonly maxRunsPerIntern: number,
  ) {}

  async start(start: RunStart): Promise<LiveRun> {
    try {
      return await this.tryStart(start);
    } catch (error) {
      if (!(error instanceof DomainError) || error.reason !== 'busy') throw error;
      if ((await this.reaper.reapOrphans(start.internId)) === 0) throw error;
      return this.tryStart(start);
    }
  }

  private async tryStart(start: RunStart): Promise<LiveRun> {
    const runId = randomUUID();
    const at = new Date().toISOString();
    const commands: SessionCommand[] = [];
    if (start.openSession) {
      commands.push({
        type: 'OpenSession',
        sessionId: start.sessionId,
        internId: start.internId,
        callerId: start.callerId,
        origin: start.origin as SessionOrigin,
        at,
      });
    }
    commands.push({
      type: 'StartRun',
      runId,
      prompt: start.prompt,
      approvalMode: start.approvalMode,
      model: start.model,
      ownerId: this.registry.ownerId,
      origin: start.origin,
      at,
    });
    const metadata = eventMetadata({ correlationId: start.correlationId, actor: start.callerId });
    const options = { inTransaction: (manager: EntityManager) => this.checkRunLimit(manager, start.internId) };
    // A new session has nothing to read: one round trip less before the client's first byte.
    const started = start.openSession
      ? await this.env.streams.executeNew(start.sessionId, commands, metadata, options)
      : await this.env.streams.execute(start.sessionId, commands, metadata, options);

    const { openSession: _opened, ...spec } = start;
    // The run keeps the session as it left it here, and records on from there without reading it again.
    const run = new LiveRun({ ...spec, runId }, this.env, { version: started.version, state: started.state });
    this.registry.add(start.sessionId, run);
    return run;
  }

  /**
   * MAX_RUNS_PER_INTERN across every replica: the new run's row is already projected; an advisory lock per intern
   * orders concurrent starts, so the last to take it sees every earlier committed start.
   */
  private async checkRunLimit(manager: EntityManager, internId: string): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`runs:intern:${internId}`]);
    const [{ count }]: { count: number }[] = await manager.query(
      `SELECT count(*)::int AS count FROM runs.runs WHERE intern_id = $1 AND status = ANY($2)`,
      [internId, GOING_RUN_STATUSES],
    );
    if (count > this.maxRunsPerIntern) {
      throw new DomainError('busy', `the intern already has ${this.maxRunsPerIntern} runs going; try again shortly`);
    }
  }
}
