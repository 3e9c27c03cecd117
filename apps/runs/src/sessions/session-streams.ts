import type { EntityManager } from 'typeorm';
import { EventMetadata, PostgresEventStore, retryOnConcurrency, StoredEvent } from '@interns/event-store';
import {
  decide,
  evolve,
  initialState,
  SESSION_STREAM_TYPE,
  SessionCommand,
  SessionEvent,
  SessionState,
  sessionStreamId,
} from '@interns/runs-domain';

/** A session's state at one version of its stream. */
export interface SessionSnapshot {
  version: number;
  state: SessionState;
}

export interface LoadedSession extends SessionSnapshot {
  events: SessionEvent[];
}

/** What a decision appended (as stored), and the session right after it. */
export interface SessionWrite {
  events: SessionEvent[];
  session: SessionSnapshot;
}

export interface SessionExecuteOptions {
  /** Same transaction as the append (e.g. the concurrent-run limit); throwing rolls the append back. */
  inTransaction?: (manager: EntityManager, events: SessionEvent[]) => Promise<void>;
}

/**
 * Session commands the one way: decide on a snapshot, append at its version. `execute` loads the snapshot
 * itself (and reloads on a race); a run's owner keeps its own snapshot instead (OwnedSession).
 */
export class SessionStreams {
  constructor(private readonly store: PostgresEventStore) {}

  async load(sessionId: string): Promise<LoadedSession> {
    const { version, events } = await this.store.readStream(sessionStreamId(sessionId));
    const domainEvents = events.map(toSessionEvent);
    return { version, events: domainEvents, state: domainEvents.reduce(evolve, initialState()) };
  }

  /** Loads, decides every command in order and appends all their events at once; on a race, all of it again. */
  async execute(
    sessionId: string,
    commands: SessionCommand[],
    metadata: EventMetadata,
    options: SessionExecuteOptions = {},
  ): Promise<SessionWrite> {
    return retryOnConcurrency(async () => this.decideAndAppend(sessionId, await this.load(sessionId), commands, metadata, options));
  }

  /**
   * Decides every command in order on `session` and appends their events at its version, once: a
   * ConcurrencyError says another writer got there first. A command the decider refuses throws before anything is appended.
   */
  async decideAndAppend(
    sessionId: string,
    session: SessionSnapshot,
    commands: SessionCommand[],
    metadata: EventMetadata,
    options: SessionExecuteOptions = {},
  ): Promise<SessionWrite> {
    let state = session.state;
    const produced: SessionEvent[] = [];
    for (const command of commands) {
      const events = decide(command, state);
      state = events.reduce(evolve, state);
      produced.push(...events);
    }
    if (produced.length === 0) return { events: [], session };
    const inTransaction = options.inTransaction;
    const appended = await this.store.appendToStream(
      sessionStreamId(sessionId),
      SESSION_STREAM_TYPE,
      session.version,
      produced.map((event) => ({ type: event.type, data: { ...event.data }, metadata })),
      inTransaction ? { inTransaction: (manager, stored) => inTransaction(manager, stored.map(toSessionEvent)) } : undefined,
    );
    // The stored form (text made storable), so the state evolves exactly as a reload would rebuild it.
    const events = appended.events.map(toSessionEvent);
    return { events, session: { version: appended.nextVersion, state: events.reduce(evolve, session.state) } };
  }
}

function toSessionEvent(stored: StoredEvent): SessionEvent {
  return { type: stored.type, data: stored.data } as SessionEvent;
}
