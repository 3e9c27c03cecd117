import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { jetstreamManager } from '@nats-io/jetstream';
import type { DataSource } from 'typeorm';
import { chunkIdOf, decodeStreamFrame } from '@interns/contracts';
import type { InternEndsRunsReason } from '@interns/contracts';
import { eventMetadata } from '@interns/event-store';
import { NO_OWNER, type SessionChannel } from '@interns/messaging';
import { GOING_RUN_STATUSES } from '@interns/runs-domain';
import { LeaderLease, type RoundOutcome, WorkerLoop } from '@interns/workers';
import { RunChunkLog } from './run-chunk-log';
import type { Ending } from './run-ending';
import type { RunRegistry } from './run-registry';
import { RunResponsePublisher } from './run-response.publisher';
import type { RunEnvironment } from './run-spec';

/** A run recorded as going (a status of GOING_RUN_STATUSES), as ending it needs. */
export interface GoingRunRow {
  id: string;
  session_id: string;
  owner_id: string;
  model: string;
}

/** How a run whose owner is gone is ended: recorded with a RunCancelled (an open question's expiry is its owner's). */
export type OrphanEnding = Exclude<Ending, { reason: 'interaction_deadline' }>;
const OWNER_LOST: OrphanEnding = { reason: 'owner_lost', tell: 'internal_error' };

const RECONCILER_LOCK: [string, string] = ['run-reconciler', 'runs/orphans'];
/** A run younger than this may still be subscribing to its session on its owner: left alone. */
const START_GRACE_MS = 5_000;
/** A probe only asks "are you there"; a live owner answers at once. */
const PROBE_TIMEOUT_MS = 1000;

/**
 * Never leaves a run going after the replica that ran it died (SIGKILL, a lost node): one replica at a time (a
 * leader lease) probes the session subject of every run recorded as going; a run nobody serves is ended `failed`
 * (`owner_lost`), and its chunk log gets the error and `[DONE]`, so its readers end too. The same ending serves
 * a start that found the intern's runs all taken (some may be orphans), an intern ending its runs, and a cancel
 * or answer that found no owner. A replica that stops gracefully ends its own runs the same way before it goes.
 */
export class OrphanReaper {
  private readonly logger = new Logger('OrphanReaper');
  private readonly worker: WorkerLoop;

  constructor(
    private readonly registry: RunRegistry,
    private readonly env: RunEnvironment,
    private readonly channel: SessionChannel,
    private readonly dataSource: DataSource,
    intervalMs: number,
  ) {
    this.worker = new WorkerLoop({
      name: 'run reconciler',
      lease: new LeaderLease(dataSource, RECONCILER_LOCK),
      pollIntervalMs: intervalMs,
      logger: this.logger,
      round: async (): Promise<RoundOutcome> => {
        const reaped = await this.reapOrphans(null, START_GRACE_MS);
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

  /**
   * Ends every going run of the intern (suspend, delete), confirmed by each run's owner. The halt is recorded first,
   * under the intern's lock (`runs.halt_intern`): a start that committed before it is among the runs read next, and
   * a start after it, from a lookup older than it, is refused (RunStartCheck) and asks lifecycle again.
   */
  async endRunsOf(internId: string, reason: InternEndsRunsReason, correlationId: string): Promise<void> {
    await this.dataSource.query('SELECT runs.halt_intern($1)', [internId]);
    const rows = await this.goingRunsOf(internId);
    await Promise.all(
      rows.map(async (row) => {
        const reply = await this.registry.send(row.session_id, { type: 'end', reason, correlationId }).catch(() => NO_OWNER);
        if (reply === NO_OWNER) await this.cancelOrphan(row, { reason, tell: 'run_ended' });
      }),
    );
  }

  /**
   * Ends the runs (of one intern, or all) whose owner no longer answers, `failed` for `owner_lost`; returns how
   * many. `startedBeforeMs`: only runs older than that, so a run whose owner is still subscribing is left alone.
   */
  async reapOrphans(internId: string | null, startedBeforeMs = 0): Promise<number> {
    const going = internId === null ? await this.allGoingRuns(startedBeforeMs) : await this.goingRunsOf(internId);
    const rows = going.filter((row) => !this.registry.holds(row.session_id));
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

  /**
   * Ends a run whose owner is gone (no replica serves its session): records it (`owner_lost` ends it `failed`),
   * then closes its chunk log the way its owner would have, so its readers get the ending and `[DONE]`.
   */
  async cancelOrphan(row: Pick<GoingRunRow, 'id' | 'session_id' | 'model'>, ending: OrphanEnding = OWNER_LOST): Promise<void> {
    const metadata = eventMetadata({ correlationId: randomUUID(), actor: null });
    const at = new Date().toISOString();
    await this.env.streams.execute(row.session_id, [{ type: 'CancelRun', runId: row.id, reason: ending.reason, at }], metadata);
    await this.closeOrphanLog(row, ending);
  }

  private async allGoingRuns(startedBeforeMs: number): Promise<GoingRunRow[]> {
    return this.dataSource.query(
      `SELECT id, session_id, owner_id, model FROM runs.runs
        WHERE status = ANY($2) AND started_at < now() - make_interval(secs => $1::double precision / 1000)`,
      [startedBeforeMs, GOING_RUN_STATUSES],
    );
  }

  private async goingRunsOf(internId: string): Promise<GoingRunRow[]> {
    return this.dataSource.query(`SELECT id, session_id, owner_id, model FROM runs.runs WHERE intern_id = $1 AND status = ANY($2)`, [
      internId,
      GOING_RUN_STATUSES,
    ]);
  }

  /** Appends the ending to an orphaned run's chunk log, numbered on from its last chunk; nothing if it already ended. */
  private async closeOrphanLog(row: Pick<GoingRunRow, 'id' | 'session_id' | 'model'>, ending: OrphanEnding): Promise<void> {
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
}
