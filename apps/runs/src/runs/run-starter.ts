import { randomUUID } from 'node:crypto';
import { DomainError } from '@interns/contracts';
import { pgErrorFields } from '@interns/database';
import { eventMetadata } from '@interns/event-store';
import type { SessionCommand, SessionOrigin } from '@interns/runs-domain';
import { EarlyModelTurn } from '../agent/early-model-turn';
import { modelTurnRequest, openingMessages } from './agent-loop';
import { LiveRun } from './live-run';
import type { OrphanReaper } from './orphan-reaper';
import type { RunRegistry } from './run-registry';
import type { RunEnvironment, RunSpec } from './run-spec';

/** What starting a run needs besides what the starter mints (run id, owner). */
export type RunStart = Omit<RunSpec, 'runId'> & {
  /** Open the session in the same append (a new session). */
  openSession: boolean;
  /** The intern's `runs.intern_halts` count when it was looked up `running` (InternLookup): the start re-checks it. */
  haltSeq: number;
};

/** SQLSTATEs `runs.append_session` refuses a start with (migration SessionAppends). */
const INTERN_HALTED = 'R0001';
const RUNS_ALL_TAKEN = 'R0002';

/**
 * The intern's runs were ended (suspend, delete) since it was looked up: the lookup is stale, the start was not
 * recorded. The caller looks the intern up afresh and tries again (TurnsService).
 */
export class InternHaltedError extends Error {
  override readonly name = 'InternHaltedError';

  constructor(readonly internId: string) {
    super(`the runs of intern ${internId} were ended since it was looked up`);
  }
}

/**
 * Starts runs on this replica: asks the model for the run's first turn (EarlyModelTurn) and records the start
 * (MAX_RUNS_PER_INTERN and the intern's halts are checked in the same statement, `runs.append_session`) at once,
 * then lets the run go, held by the registry; a refused start gives the model turn up. An intern whose runs are all taken may have some left behind by a
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
    const options = {
      runStart: { internId: start.internId, haltSeq: start.haltSeq, maxRuns: this.maxRunsPerIntern },
    };
    // Asked for now, read once the start is recorded: the model's time to its first token overlaps the statement.
    const firstTurn = new EarlyModelTurn(start.provider, modelTurnRequest(start, openingMessages(start)));
    let started;
    try {
      // A new session has nothing to read: one round trip less before the client's first byte.
      started = start.openSession
        ? await this.env.streams.executeNew(start.sessionId, commands, metadata, options)
        : await this.env.streams.execute(start.sessionId, commands, metadata, options);
    } catch (error) {
      const refusal = this.refusal(error, start.internId);
      firstTurn.abandon(refusal);
      throw refusal;
    }

    const { openSession: _opened, haltSeq: _halts, ...spec } = start;
    // The run keeps the session as it left it here, and records on from there without reading it again.
    const run = new LiveRun({ ...spec, runId }, this.env, { version: started.version, state: started.state }, firstTurn);
    this.registry.add(start.sessionId, run);
    return run;
  }

  /**
   * MAX_RUNS_PER_INTERN across every replica: the start statement takes an advisory lock per intern, so the last
   * start to take it counts every earlier committed one (and its own run) as going.
   */
  private refusal(error: unknown, internId: string): unknown {
    const { code } = pgErrorFields(error);
    if (code === RUNS_ALL_TAKEN) return new DomainError('busy', `the intern already has ${this.maxRunsPerIntern} runs going; try again shortly`);
    if (code === INTERN_HALTED) return new InternHaltedError(internId);
    return error;
  }
}
