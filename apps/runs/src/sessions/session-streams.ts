import {
  CommandHandler,
  ConcurrencyError,
  type CommandResult,
  type EventMetadata,
  type InTransaction,
  type LoadedStream,
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
import { logRunEnds } from '../runs/run-end.log';

/** A session's state at one version of its stream. */
export type SessionSnapshot = StreamState<SessionState>;

export type LoadedSession = LoadedStream<SessionState>;

/** What a decision appended (as stored), and the session right after it. */
export type SessionWrite = CommandResult<SessionState, SessionEvent>;

export interface SessionExecuteOptions {
  /** Same transaction as the append (e.g. the concurrent-run limit); throwing rolls the append back. */
  inTransaction?: InTransaction;
}

/**
 * Session commands, by session id, through the command handler: `execute` loads the session itself (and
 * again on a race); a run's owner decides on the session it keeps instead (`executeAt`, see OwnedSession). Every
 * session write goes through here, so each run's end is logged here, once (logRunEnds).
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
    const write = await this.handler.handle(sessionStreamId(sessionId), commands, { metadata, inTransaction: options.inTransaction });
    logRunEnds(write, metadata.correlation_id);
    return write;
  }

  /**
   * Decides every command in order on `session` and appends their events at its version, once: a
   * ConcurrencyError says another writer got there first. A refused command throws before anything is appended.
   */
  async executeAt(
    sessionId: string,
    session: SessionSnapshot,
    commands: SessionCommand[],
    metadata: EventMetadata,
    options: SessionExecuteOptions = {},
  ): Promise<SessionWrite> {
    const write = await this.handler.handleAt(sessionStreamId(sessionId), session, commands, { metadata, inTransaction: options.inTransaction });
    logRunEnds(write, metadata.correlation_id);
    return write;
  }

  /**
   * `execute` for a session the caller believes new (a chat or invoke without a session id): decided on the
   * empty session without reading it first; if the stream exists after all, as `execute` (load, decide again).
   */
  async executeNew(sessionId: string, commands: SessionCommand[], metadata: EventMetadata, options: SessionExecuteOptions = {}): Promise<SessionWrite> {
    try {
      return await this.executeAt(sessionId, { version: 0, state: sessionDecider.initialState() }, commands, metadata, options);
    } catch (error) {
      if (!(error instanceof ConcurrencyError)) throw error;
      return this.execute(sessionId, commands, metadata, options);
    }
  }
}
