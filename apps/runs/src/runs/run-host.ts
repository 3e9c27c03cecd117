import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { Subscription } from '@nats-io/transport-node';
import type { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '@interns/contracts';
import type { InternEndsRunsReason, RunEndReason } from '@interns/contracts';
import { eventMetadata } from '@interns/event-store';
import { NO_OWNER, SessionChannel } from '@interns/messaging';
import type { SessionCommand, SessionOrigin } from '@interns/runs-domain';
import { LiveRun, RunEnvironment, RunSpec } from './live-run';

/** What starting a run needs besides what the host mints (run id, owner). */
export type RunStart = Omit<RunSpec, 'runId'> & {
  /** Open the session in the same append (a new session). */
  openSession: boolean;
};

interface ActiveRunRow {
  id: string;
  session_id: string;
  owner_id: string;
}

/** How long a replica waits for another replica to confirm a message to a run it owns. */
const OWNER_REPLY_TIMEOUT_MS = 5000;
/** A probe only asks "are you there"; a live owner answers at once. */
const PROBE_TIMEOUT_MS = 1000;

/**
 * The runs this replica owns. Starting a run records it (the concurrent-run limit is checked in the same
 * transaction), subscribes to the session's subject, then lets the run go; the subscription ends with it.
 * Runs owned by replicas that vanished are found by probing their session subject and cancelled as `owner_lost`.
 */
export class RunHost {
  readonly ownerId = randomUUID();
  private readonly logger = new Logger('RunHost');
  private readonly live = new Map<string, { run: LiveRun; subscription: Subscription }>();

  constructor(
    private readonly env: RunEnvironment,
    private readonly channel: SessionChannel,
    private readonly dataSource: DataSource,
    private readonly maxRunsPerIntern: number,
  ) {}

  get activeRuns(): number {
    return this.live.size;
  }

  async start(start: RunStart): Promise<LiveRun> {
    try {
      return await this.tryStart(start);
    } catch (error) {
      if (!(error instanceof DomainError) || error.reason !== 'busy') throw error;
      // Runs left behind by a replica that died still count; clear them once, then decide again.
      if ((await this.reapOrphans(start.internId)) === 0) throw error;
      return this.tryStart(start);
    }
  }

  /** Delivers a message to the session's run, wherever it runs; NO_OWNER when no replica serves the session. */
  async send(sessionId: string, message: Parameters<SessionChannel['send']>[1]) {
    const local = this.live.get(sessionId);
    if (local) return local.run.receive(message);
    return this.channel.send(sessionId, message, OWNER_REPLY_TIMEOUT_MS);
  }

  /** Ends every going run of the intern (suspend, delete), confirmed by each run's owner. */
  async endRunsOf(internId: string, reason: InternEndsRunsReason, correlationId: string): Promise<void> {
    const rows = await this.activeRunsOf(internId);
    await Promise.all(
      rows.map(async (row) => {
        const reply = await this.send(row.session_id, { type: 'end', reason, correlationId }).catch(() => NO_OWNER);
        if (reply === NO_OWNER) await this.cancelOrphan(row, reason);
      }),
    );
  }

  /** Cancels a run whose owner is gone (no replica serves its session). */
  async cancelOrphan(row: { id: string; session_id: string }, reason: 'owner_lost' | RunEndReason = 'owner_lost'): Promise<void> {
    const metadata = eventMetadata({ correlationId: randomUUID(), actor: null });
    await this.env.streams.execute(row.session_id, [{ type: 'CancelRun', runId: row.id, reason, at: new Date().toISOString() }], metadata);
  }

  /** Ends this replica's runs (shutdown): attached clients get an error chunk, and the runs are recorded as cancelled. */
  async shutdown(): Promise<void> {
    await Promise.all([...this.live.values()].map(({ run }) => run.shutdown()));
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
      ownerId: this.ownerId,
      origin: start.origin,
      at,
    });
    const metadata = eventMetadata({ correlationId: start.correlationId, actor: start.callerId });
    const started = await this.env.streams.execute(start.sessionId, commands, metadata, {
      inTransaction: (manager) => this.checkRunLimit(manager, start.internId),
    });

    const { openSession: _opened, ...spec } = start;
    // The run keeps the session as it left it here, and records on from there without reading it again.
    const run = new LiveRun({ ...spec, runId }, this.env, { version: started.version, state: started.state });
    const subscription = this.channel.serve(start.sessionId, (message) => run.receive(message));
    this.live.set(start.sessionId, { run, subscription });
    void run.finished.then(() => {
      subscription.unsubscribe();
      if (this.live.get(start.sessionId)?.run === run) this.live.delete(start.sessionId);
    });
    return run;
  }

  /**
   * MAX_RUNS_PER_INTERN across every replica: the new run's row is already projected; an advisory lock per intern
   * orders concurrent starts, so the last to take it sees every earlier committed start.
   */
  private async checkRunLimit(manager: EntityManager, internId: string): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`runs:intern:${internId}`]);
    const [{ count }]: { count: number }[] = await manager.query(
      `SELECT count(*)::int AS count FROM runs.runs WHERE intern_id = $1 AND status = 'active'`,
      [internId],
    );
    if (count > this.maxRunsPerIntern) {
      throw new DomainError('busy', `the intern already has ${this.maxRunsPerIntern} runs going; try again shortly`);
    }
  }

  private async activeRunsOf(internId: string): Promise<ActiveRunRow[]> {
    return this.dataSource.query(
      `SELECT id, session_id, owner_id FROM runs.runs WHERE intern_id = $1 AND status = 'active'`,
      [internId],
    );
  }

  /** Cancels the intern's runs whose owner no longer answers; returns how many. */
  private async reapOrphans(internId: string): Promise<number> {
    const rows = (await this.activeRunsOf(internId)).filter((row) => !this.live.has(row.session_id));
    let reaped = 0;
    await Promise.all(
      rows.map(async (row) => {
        const reply = await this.channel.send(row.session_id, { type: 'probe' }, PROBE_TIMEOUT_MS).catch(() => null);
        if (reply !== NO_OWNER) return;
        await this.cancelOrphan(row);
        this.logger.warn(`run ${row.id} of session ${row.session_id} lost its owner ${row.owner_id}; cancelled`);
        reaped++;
      }),
    );
    return reaped;
  }
}
