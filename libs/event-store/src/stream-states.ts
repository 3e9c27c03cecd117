import type { EntityManager } from 'typeorm';
import type { StoredEvent } from './event.types';
import { EVENT_COLUMNS, type EventRow, eventStoreTables, toStoredEvent } from './event-store.sql';
import { type Upcaster, upcasterChain, type UpcastFn } from './upcaster';

/** How an aggregate's state is folded from its stored events (its decider's `initialState` and `evolve`). */
export interface StreamFold<S> {
  initialState(): S;
  /** Gets each event upcast to its current shape. */
  evolve(state: S, event: StoredEvent): S;
  upcasters?: readonly Upcaster[];
}

export interface StreamStep<S> {
  /** The event, upcast. */
  event: StoredEvent;
  before: S;
  after: S;
}

/**
 * A stream's state as of one of its events, folded by the aggregate's own decider from the stored events,
 * for readers that react to an event with what the aggregate was before and after it (an inline projection,
 * an integration event translator) instead of re-deriving the aggregate's rules.
 *
 * `remember` keeps the latest state of that many streams, so a tail reading a stream's events one after the
 * other folds each event once. Only readers of committed events may remember: an inline projection runs in
 * a transaction that may roll back, and a state remembered from it could describe events that never were.
 */
export class StreamStates<S> {
  private readonly events: string;
  private readonly streams: string;
  private readonly upcast: UpcastFn;
  private readonly remembered = new Map<string, { version: number; state: S }>();

  constructor(
    schema: string,
    private readonly fold: StreamFold<S>,
    private readonly remember = 0,
  ) {
    const tables = eventStoreTables(schema);
    this.events = tables.events;
    this.streams = tables.streams;
    this.upcast = upcasterChain(fold.upcasters ?? []);
  }

  /** The state of `streamId` after its first `version - 1` events, read through `reader`. */
  async before(reader: EntityManager, streamId: string, version: number): Promise<S> {
    const known = this.remembered.get(streamId);
    if (known?.version === version - 1) return known.state;
    const rows: EventRow[] = await reader.query(
      `SELECT ${EVENT_COLUMNS}
         FROM ${this.events} e JOIN ${this.streams} s ON s.stream_id = e.stream_id
        WHERE e.stream_id = $1 AND e.stream_version < $2
        ORDER BY e.stream_version`,
      [streamId, version],
    );
    return rows.reduce((state, row) => this.fold.evolve(state, this.upcast(toStoredEvent(row))), this.fold.initialState());
  }

  /** Folds `event` onto its stream's state just before it. */
  async step(reader: EntityManager, stored: StoredEvent): Promise<StreamStep<S>> {
    const before = await this.before(reader, stored.streamId, stored.streamVersion);
    return this.apply(stored, before);
  }

  /** Folds `event` onto `before` (the state of its stream just before it). */
  apply(stored: StoredEvent, before: S): StreamStep<S> {
    const event = this.upcast(stored);
    const after = this.fold.evolve(before, event);
    this.keep(event.streamId, event.streamVersion, after);
    return { event, before, after };
  }

  private keep(streamId: string, version: number, state: S): void {
    if (this.remember <= 0) return;
    // Re-inserted last: the map's order is least recently used first.
    this.remembered.delete(streamId);
    this.remembered.set(streamId, { version, state });
    if (this.remembered.size > this.remember) this.remembered.delete(this.remembered.keys().next().value as string);
  }
}
