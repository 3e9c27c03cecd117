import type { EntityManager } from 'typeorm';
import { EventMetadata, PostgresEventStore, retryOnConcurrency, StoredEvent } from '@interns/event-store';
import {
  decide,
  INTERN_STREAM_TYPE,
  InternCommand,
  InternEvent,
  InternState,
  internStreamId,
  stateFrom,
} from '@interns/lifecycle-domain';

/** One intern's stream as loaded: its version, the decider state and the stored events. */
export interface LoadedIntern {
  version: number;
  state: InternState;
  events: StoredEvent[];
}

export interface ExecuteOptions {
  /** Same transaction as the append; runs only when the command produced events. */
  inTransaction?: (manager: EntityManager) => Promise<void>;
}

/**
 * Runs intern commands the one way: load the stream, let the decider decide, append at the loaded version;
 * on a concurrent append, load and decide again. `onAppended` hears of every commit (it wakes the process
 * manager of this replica).
 */
export class InternStreams {
  constructor(
    private readonly store: PostgresEventStore,
    private readonly onAppended: () => void = () => undefined,
  ) {}

  async load(internId: string): Promise<LoadedIntern> {
    const { version, events } = await this.store.readStream(internStreamId(internId));
    return { version, events, state: stateFrom(events.map(toDomainEvent)) };
  }

  /** `command` returns null to do nothing with what it loaded. Decider refusals propagate as DomainError. */
  async execute(
    internId: string,
    command: (loaded: LoadedIntern) => InternCommand | null,
    metadata: EventMetadata | ((loaded: LoadedIntern) => EventMetadata),
    options: ExecuteOptions = {},
  ): Promise<InternEvent[]> {
    const produced = await retryOnConcurrency(async () => {
      const loaded = await this.load(internId);
      const next = command(loaded);
      if (next === null) return [];
      const events = decide(next, loaded.state);
      if (events.length === 0) return [];
      const meta = typeof metadata === 'function' ? metadata(loaded) : metadata;
      await this.store.appendToStream(
        internStreamId(internId),
        INTERN_STREAM_TYPE,
        loaded.version,
        events.map((event) => ({ type: event.type, data: { ...event.data }, metadata: meta })),
        options.inTransaction ? { inTransaction: options.inTransaction } : undefined,
      );
      return events;
    });
    if (produced.length > 0) this.onAppended();
    return produced;
  }
}

export function toDomainEvent(stored: { type: string; data: Record<string, unknown> }): InternEvent {
  return { type: stored.type, data: stored.data } as InternEvent;
}
