import {
  CommandHandler,
  type CommandResult,
  type EventMetadata,
  type HeldStream,
  type LoadedStream,
  NO_STREAM,
  type OneStatementAppend,
  PostgresEventStore,
  type StreamState,
} from '@interns/event-store';
import {
  SESSION_STREAM_TYPE,
  SessionCommand,
  sessionDecider,
  SessionEvent,
  SessionState,
  sessionStreamId,
} from '@interns/runs-domain';
import { logRunEnds } from './run-end.log';
import { sessionRowWrites } from './session-read-model.projection';

/** A session's state at one version of its stream. */
export type SessionSnapshot = StreamState<SessionState>;

export type LoadedSession = LoadedStream<SessionState>;

/** What a decision appended (as stored), and the session right after it. */
export type SessionWrite = CommandResult<SessionState, SessionEvent>;

export interface SessionExecuteOptions {
  /** The append starts a run: checked in its statement (see RunStartCheck). */
  runStart?: RunStartCheck;
}

/**
 * What `runs.append_session` checks when an append starts a run, under the intern's advisory lock: that no end of
 * the intern's runs was recorded since it was looked up (`haltSeq`, runs.intern_halts), and MAX_RUNS_PER_INTERN
 * counting the new run. Refused with SQLSTATE R0001 or R0002 (RunStarter maps them).
 */
export interface RunStartCheck {
  internId: string;
  haltSeq: number;
  maxRuns: number;
}

export interface SessionExecuteFromOptions extends SessionExecuteOptions {
  /** Hears of the session as read again after a conflict, before the commands are decided on it again. */
  onReloaded?: (reloaded: LoadedSession) => void;
}

/**
 * Session commands, by session id, through the command handler: `execute` loads the session itself (and
 * again on a race); a run's owner decides on the session it keeps instead, and a new session on no session
 * (`executeFrom`, `executeNew`). Every session write goes through here, so each run's end is logged here, once
 * (logRunEnds).
 */
export class SessionStreams {
  private readonly handler: CommandHandler<SessionState, SessionCommand, SessionEvent>;

  constructor(store: PostgresEventStore) {
    this.handler = new CommandHandler(store, { decider: sessionDecider, streamType: SESSION_STREAM_TYPE });
  }

  load(sessionId: string): Promise<LoadedSession> {
    return this.handler.load(sessionStreamId(sessionId));
  }

  /** Decides every command in order and appends all their events at once; on a race, all of it again. */
  async execute(
    sessionId: string,
    commands: SessionCommand[],
    metadata: EventMetadata,
    options: SessionExecuteOptions = {},
  ): Promise<SessionWrite> {
    const write = await this.handler.handle(sessionStreamId(sessionId), commands, { metadata, ...appendOptions(options) });
    logRunEnds(write, metadata.correlation_id);
    return write;
  }

  /**
   * Decides every command in order on `session` (or on no session) without reading it, and appends their events
   * at its version; on a race, loads the session and decides all of it again. A refused command throws before
   * anything is appended.
   */
  async executeFrom(
    sessionId: string,
    session: HeldStream<SessionState>,
    commands: SessionCommand[],
    metadata: EventMetadata,
    options: SessionExecuteFromOptions = {},
  ): Promise<SessionWrite> {
    const { onReloaded } = options;
    const write = await this.handler.handleFrom(sessionStreamId(sessionId), session, commands, { metadata, onReloaded, ...appendOptions(options) });
    logRunEnds(write, metadata.correlation_id);
    return write;
  }

  /** For a session the caller believes new (a chat or invoke without a session id); if it exists after all, as `execute`. */
  executeNew(sessionId: string, commands: SessionCommand[], metadata: EventMetadata, options: SessionExecuteOptions = {}): Promise<SessionWrite> {
    return this.executeFrom(sessionId, NO_STREAM, commands, metadata, options);
  }
}

/**
 * Every session append is one statement (`runs.append_session`): the events, the read model rows this process
 * computed from them (sessionRowWrites, on the state the decider held) and a run start's checks, in one round trip
 * and one commit.
 */
function appendOptions(options: SessionExecuteOptions): { inOneStatement: OneStatementAppend } {
  const start = options.runStart;
  const check =
    start === undefined
      ? null
      : JSON.stringify({ intern_id: start.internId, halt_seq: start.haltSeq, max_runs: start.maxRuns });
  return {
    inOneStatement: (pending, stateBefore) => ({
      sql: 'SELECT * FROM runs.append_session($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb)',
      params: [JSON.stringify(sessionRowWrites(pending, stateBefore as SessionState)), check],
    }),
  };
}
