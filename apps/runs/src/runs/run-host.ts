import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { jetstreamManager } from '@nats-io/jetstream';
import type { Subscription } from '@nats-io/transport-node';
import type { DataSource, EntityManager } from 'typeorm';
import { chunkIdOf, decodeStreamFrame, DomainError } from '@interns/contracts';
import type { InternEndsRunsReason } from '@interns/contracts';
import { eventMetadata } from '@interns/event-store';
import { NO_OWNER, SessionChannel } from '@interns/messaging';
import { GOING_RUN_STATUSES } from '@interns/runs-domain';
import type { SessionCommand, SessionOrigin } from '@interns/runs-domain';
import { LiveRun } from './live-run';
import type { RunEnvironment, RunSpec } from './run-spec';
import { RunChunkLog } from './run-chunk-log';
import { RunResponsePublisher } from './run-response.publisher';

/** What starting a run needs besides what the host mints (run id, owner). */
export type RunStart = Omit<RunSpec, 'runId'> & {
  /** Open the session in the same append (a new session). */
  openSession: boolean;
};

/** A run recorded as going (a status of GOING_RUN_STATUSES), as ending it needs. */
export interface ActiveRunRow {
  id: string;
  session_id: string;
  owner_id: string;
  model: string;
}

/** Why a run whose owner is gone is ended, and what its readers are told. */
export type OrphanEnding =
  | { reason: 'owner_lost'; tell: 'internal_error' }
  | { reason: 'caller_cancelled'; tell: 'stop' }
  | { reason: InternEndsRunsReason; tell: 'run_ended' };
const OWNER_LOST: OrphanEnding = { reason: 'owner_lost', tell: 'internal_error' };

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
        if (reply === NO_OWNER) await this.cancelOrphan(row, { reason, tell: 'run_ended' });
      }),
    );
  }

  /**
   * Ends a run whose owner is gone (no replica serves its session): records it (`owner_lost` ends it `failed`),
   * then closes its chunk log the way its owner would have, so its readers get the ending and `[DONE]`.
   */
  async cancelOrphan(row: Pick<ActiveRunRow, 'id' | 'session_id' | 'model'>, ending: OrphanEnding = OWNER_LOST): Promise<void> {
    const metadata = eventMetadata({ correlationId: randomUUID(), actor: null });
    const at = new Date().toISOString();
    await this.env.streams.execute(row.session_id, [{ type: 'CancelRun', runId: row.id, reason: ending.reason, at }], metadata);
    await this.closeOrphanLog(row, ending);
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
    const options = { inTransaction: (manager: EntityManager) => this.checkRunLimit(manager, start.internId) };
    // A new session has nothing to read: one round trip less before the client's first byte.
    const started = start.openSession
      ? await this.env.streams.executeNew(start.sessionId, commands, metadata, options)
      : await this.env.streams.execute(start.sessionId, commands, metadata, options);

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
      `SELECT count(*)::int AS count FROM runs.runs WHERE intern_id = $1 AND status = ANY($2)`,
      [internId, GOING_RUN_STATUSES],
    );
    if (count > this.maxRunsPerIntern) {
      throw new DomainError('busy', `the intern already has ${this.maxRunsPerIntern} runs going; try again shortly`);
    }
  }

  private async allActiveRuns(startedBeforeMs: number): Promise<ActiveRunRow[]> {
    return this.dataSource.query(
      `SELECT id, session_id, owner_id, model FROM runs.runs
        WHERE status = ANY($2) AND started_at < now() - make_interval(secs => $1::double precision / 1000)`,
      [startedBeforeMs, GOING_RUN_STATUSES],
    );
  }

  private async activeRunsOf(internId: string): Promise<ActiveRunRow[]> {
    return this.dataSource.query(
      `SELECT id, session_id, owner_id, model FROM runs.runs WHERE intern_id = $1 AND status = ANY($2)`,
      [internId, GOING_RUN_STATUSES],
    );
  }

  /** Appends the ending to an orphaned run's chunk log, numbered on from its last chunk; nothing if it already ended. */
  private async closeOrphanLog(row: Pick<ActiveRunRow, 'id' | 'session_id' | 'model'>, ending: OrphanEnding): Promise<void> {
    const { nc, subjects } = this.env;
    const subject = subjects.runs.chunks(row.id);
    try {
      const jsm = await jetstreamManager(nc);
      const last = await jsm.streams.getMessage(subjects.runChunkStreamName, { last_by_subj: subject });
      const frame = last === null ? null : decodeStreamFrame(last.data);
      if (frame?.kind === 'done') return;
      const log = RunChunkLog.of(nc, subject, frame?.seq ?? 0);
      const response = new RunResponsePublisher({
        chunkId: chunkIdOf(randomUUID()),
        created: Math.floor(Date.now() / 1000),
        model: row.model,
        sessionId: row.session_id,
        log,
        live: null,
      });
      response.endWithRun(ending, { finish: 'stop' }, null);
      await log.flushed();
    } catch (error) {
      this.logger.error(`could not close the chunk log of run ${row.id}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * Ends the runs (of one intern, or all) whose owner no longer answers, `failed` for `owner_lost`; returns how
   * many. `startedBeforeMs`: only runs older than that, so a run whose owner is still subscribing is left alone.
   */
  async reapOrphans(internId: string | null, startedBeforeMs = 0): Promise<number> {
    const active = internId === null ? await this.allActiveRuns(startedBeforeMs) : await this.activeRunsOf(internId);
    const rows = active.filter((row) => !this.live.has(row.session_id));
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
