import type { EntityManager } from 'typeorm';
import { EventMetadata, PostgresEventStore, retryOnConcurrency } from '@interns/event-store';
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

export interface LoadedSession {
  version: number;
  state: SessionState;
  events: SessionEvent[];
}

export interface SessionExecuteOptions {
  /** Same transaction as the append (e.g. the concurrent-run limit); throwing rolls the append back. */
  inTransaction?: (manager: EntityManager, events: SessionEvent[]) => Promise<void>;
}

/** Session commands the one way: load, decide, append at the loaded version; reload and decide again on a race. */
export class SessionStreams {
  constructor(private readonly store: PostgresEventStore) {}

  async load(sessionId: string): Promise<LoadedSession> {
    const { version, events } = await this.store.readStream(sessionStreamId(sessionId));
    const domainEvents = events.map((stored) => ({ type: stored.type, data: stored.data }) as SessionEvent);
    return { version, events: domainEvents, state: domainEvents.reduce(evolve, initialState()) };
  }

  /** Decides every command in order on the loaded state and appends all their events at once. */
  async execute(
    sessionId: string,
    commands: SessionCommand[] | ((loaded: LoadedSession) => SessionCommand[]),
    metadata: EventMetadata,
    options: SessionExecuteOptions = {},
  ): Promise<SessionEvent[]> {
    return retryOnConcurrency(async () => {
      const loaded = await this.load(sessionId);
      let state = loaded.state;
      const produced: SessionEvent[] = [];
      for (const command of typeof commands === 'function' ? commands(loaded) : commands) {
        const events = decide(command, state);
        state = events.reduce(evolve, state);
        produced.push(...events);
      }
      if (produced.length === 0) return produced;
      const inTransaction = options.inTransaction;
      await this.store.appendToStream(
        sessionStreamId(sessionId),
        SESSION_STREAM_TYPE,
        loaded.version,
        produced.map((event) => ({ type: event.type, data: { ...event.data }, metadata })),
        inTransaction ? { inTransaction: (manager) => inTransaction(manager, produced) } : undefined,
      );
      return produced;
    });
  }
}
