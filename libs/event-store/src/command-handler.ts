import type { EntityManager } from 'typeorm';
import { retryOnConcurrency } from './concurrency.error';
import type { Decider, DomainEvent } from './decider';
import type { EventMetadata, StoredEvent } from './event.types';
import type { PostgresEventStore } from './postgres-event-store';

/** An aggregate's state at one version of its stream (0: the stream does not exist yet). */
export interface StreamState<State> {
  version: number;
  state: State;
}

/** A stream as loaded: its state and the stored events it was built from. */
export interface LoadedStream<State> extends StreamState<State> {
  events: StoredEvent[];
}

/** One command, several decided in order and appended at once, or null to append nothing. */
export type Commands<Command> = Command | Command[] | null;

/** The commands, or a function choosing them from what was loaded (the state, the events, the version). */
export type CommandsFrom<State, Command> = Commands<Command> | ((loaded: LoadedStream<State>) => Commands<Command>);

/** Same transaction as the append, after the inline projections; throwing rolls the append back. */
export type InTransaction = (manager: EntityManager, stored: StoredEvent[]) => Promise<void>;

export interface HandleOptions<State> {
  /** Put on every appended event; a function computes it from what was loaded (e.g. the causing event). */
  metadata: EventMetadata | ((loaded: LoadedStream<State>) => EventMetadata);
  inTransaction?: InTransaction;
}

export interface HandleAtOptions {
  metadata: EventMetadata;
  inTransaction?: InTransaction;
}

/** What a command appended and the aggregate right after it (the loaded one when nothing was appended). */
export interface CommandResult<State, Event> extends StreamState<State> {
  /** As stored (strings made storable), so `state` is exactly what a reload builds. */
  events: Event[];
  /** The aggregate the commands were decided on (what the events changed; e.g. to log a transition). */
  previous: State;
}

export interface CommandHandlerOptions<State, Command, Event extends DomainEvent> {
  decider: Decider<State, Command, Event>;
  streamType: string;
  /** Tries of `handle` on concurrency conflicts, the first included; defaults to retryOnConcurrency's. */
  attempts?: number;
  /** Hears of every append that committed events (e.g. to wake a process manager). */
  onAppended?: () => void;
}

/**
 * Commands of one aggregate type the one way (Emmett's `handleCommand` with a decider): load the stream,
 * decide, append at the loaded version; on a concurrency conflict load and decide again, a bounded number of
 * times. A decider's refusal (DomainError) propagates before anything is appended.
 */
export class CommandHandler<State, Command, Event extends DomainEvent> {
  constructor(
    private readonly store: PostgresEventStore,
    private readonly options: CommandHandlerOptions<State, Command, Event>,
  ) {}

  async load(streamId: string): Promise<LoadedStream<State>> {
    const { version, events } = await this.store.readStream(streamId);
    return { version, events, state: this.evolveAll(this.options.decider.initialState(), events.map(toDomainEvent<Event>)) };
  }

  async handle(
    streamId: string,
    commands: CommandsFrom<State, Command>,
    options: HandleOptions<State>,
  ): Promise<CommandResult<State, Event>> {
    const { metadata, inTransaction } = options;
    const result = await retryOnConcurrency(
      async () => {
        const loaded = await this.load(streamId);
        return this.decideAndAppend(streamId, loaded, isChooser(commands) ? commands(loaded) : commands, {
          // Only computed when something is appended.
          metadata: () => (typeof metadata === 'function' ? metadata(loaded) : metadata),
          inTransaction,
        });
      },
      { attempts: this.options.attempts },
    );
    if (result.events.length > 0) this.options.onAppended?.();
    return result;
  }

  /**
   * Decides on a state the caller already holds, without reading the stream, and appends at its version,
   * once: a ConcurrencyError says another writer got there first (the caller reloads and decides again).
   */
  async handleAt(
    streamId: string,
    from: StreamState<State>,
    commands: Commands<Command>,
    options: HandleAtOptions,
  ): Promise<CommandResult<State, Event>> {
    const { metadata, inTransaction } = options;
    const result = await this.decideAndAppend(streamId, from, commands, { metadata: () => metadata, inTransaction });
    if (result.events.length > 0) this.options.onAppended?.();
    return result;
  }

  private async decideAndAppend(
    streamId: string,
    from: StreamState<State>,
    commands: Commands<Command>,
    options: { metadata: () => EventMetadata; inTransaction?: InTransaction },
  ): Promise<CommandResult<State, Event>> {
    const decided = this.decideInOrder(from.state, commands);
    if (decided.length === 0) return { events: [], version: from.version, state: from.state, previous: from.state };
    const metadata = options.metadata();
    const appended = await this.store.appendToStream(
      streamId,
      this.options.streamType,
      from.version,
      decided.map((event) => ({ type: event.type, data: { ...event.data }, metadata })),
      options.inTransaction ? { inTransaction: options.inTransaction } : undefined,
    );
    const events = appended.events.map(toDomainEvent<Event>);
    return { events, version: appended.nextVersion, state: this.evolveAll(from.state, events), previous: from.state };
  }

  /** Each command is decided on the state the previous ones left. */
  private decideInOrder(state: State, commands: Commands<Command>): Event[] {
    if (commands === null) return [];
    const decided: Event[] = [];
    let current = state;
    for (const command of Array.isArray(commands) ? commands : [commands]) {
      const events = this.options.decider.decide(command, current);
      current = this.evolveAll(current, events);
      decided.push(...events);
    }
    return decided;
  }

  private evolveAll(state: State, events: Event[]): State {
    return events.reduce((current, event) => this.options.decider.evolve(current, event), state);
  }
}

function isChooser<State, Command>(
  commands: CommandsFrom<State, Command>,
): commands is (loaded: LoadedStream<State>) => Commands<Command> {
  return typeof commands === 'function';
}

/** Upcasting happened when the stream was read; the decider's event types are the stored ones. */
function toDomainEvent<Event extends DomainEvent>(stored: StoredEvent): Event {
  return { type: stored.type, data: stored.data } as Event;
}
