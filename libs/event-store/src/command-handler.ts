import type { EntityManager } from 'typeorm';
import { retryOnConcurrency } from './concurrency.error';
import type { Decider, DomainEvent } from './decider';
import type { EventMetadata, StoredEvent } from './event.types';
import type { OneStatementAppend, PostgresEventStore } from './postgres-event-store';

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
  /** The append as one statement (AppendOptions.inOneStatement), each attempt's. */
  inOneStatement?: OneStatementAppend;
}

export interface HandleAtOptions {
  metadata: EventMetadata;
  inTransaction?: InTransaction;
  /** The append as one statement (AppendOptions.inOneStatement), each attempt's. */
  inOneStatement?: OneStatementAppend;
}

export interface HandleFromOptions<State> extends HandleAtOptions {
  /**
   * Hears of the stream as read again after a conflict, before it is decided on: a caller keeping the state
   * (a stream's owner) then sees what the stream has, even when the decider refuses.
   */
  onReloaded?: (reloaded: LoadedStream<State>) => void;
}

/** Expect no stream yet (Emmett's STREAM_DOES_NOT_EXIST): decide on the initial state, append at version 0. */
export const NO_STREAM = 'no_stream';

/** A state the caller already holds, or NO_STREAM for a stream it believes new: decided on without reading. */
export type HeldStream<State> = StreamState<State> | typeof NO_STREAM;

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
  /** Tries of an append on concurrency conflicts, the first included (not `handleAt`'s); defaults to retryOnConcurrency's. */
  attempts?: number;
  /** Hears of every append that committed events (e.g. to wake a process manager). */
  onAppended?: () => void;
}

/**
 * Commands of one aggregate type the one way (Emmett's `handleCommand` with a decider): decide on the stream,
 * append at its version; on a concurrency conflict load and decide again, a bounded number of times. What the
 * first attempt decides on differs: the stream as loaded (`handle`), a state the caller holds or no stream at
 * all (`handleFrom`), or the initial state at the stream's head (`handleAtHead`). A decider's refusal
 * (DomainError) propagates before anything is appended.
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
    const { metadata, ...write } = options;
    return this.appendRetrying(this.options.attempts, async () => {
      const loaded = await this.load(streamId);
      return this.decideAndAppend(streamId, loaded, isChooser(commands) ? commands(loaded) : commands, {
        // Only computed when something is appended.
        metadata: () => (typeof metadata === 'function' ? metadata(loaded) : metadata),
        ...write,
      });
    });
  }

  /**
   * Decides first on a state the caller holds (a stream it owns and keeps), or on no stream (one it believes
   * new), without reading the stream; when another writer got there first, loads it and decides again, as
   * `handle` does.
   */
  async handleFrom(
    streamId: string,
    from: HeldStream<State>,
    commands: Commands<Command>,
    options: HandleFromOptions<State>,
  ): Promise<CommandResult<State, Event>> {
    const { metadata, onReloaded, ...write } = options;
    const reload = async (): Promise<LoadedStream<State>> => {
      const reloaded = await this.load(streamId);
      onReloaded?.(reloaded);
      return reloaded;
    };
    return this.appendRetrying(this.options.attempts, async (attempt) => {
      const start = attempt === 1 ? this.held(from) : await reload();
      return this.decideAndAppend(streamId, start, commands, { metadata: () => metadata, ...write });
    });
  }

  /**
   * `handleFrom` once: a ConcurrencyError says another writer got there first (the caller reloads and decides
   * again).
   */
  async handleAt(
    streamId: string,
    from: HeldStream<State>,
    commands: Commands<Command>,
    options: HandleAtOptions,
  ): Promise<CommandResult<State, Event>> {
    const { metadata, ...write } = options;
    return this.appendRetrying(1, () => this.decideAndAppend(streamId, this.held(from), commands, { metadata: () => metadata, ...write }));
  }

  /**
   * For a log whose decisions need no past (an audit): decides on the initial state and appends at the stream's
   * head, reading its version alone (its events grow without bound); on a race, reads the version again. The
   * result's `state` is the initial state evolved by what was appended, not the whole stream's.
   */
  async handleAtHead(
    streamId: string,
    commands: Commands<Command>,
    options: HandleAtOptions,
  ): Promise<CommandResult<State, Event>> {
    const { metadata, ...write } = options;
    return this.appendRetrying(this.options.attempts, async () => {
      const head = { version: await this.store.streamVersion(streamId), state: this.options.decider.initialState() };
      return this.decideAndAppend(streamId, head, commands, { metadata: () => metadata, ...write });
    });
  }

  /** Every append of this handler: tried again on a conflict, then `onAppended` hears of a commit, once. */
  private async appendRetrying(
    attempts: number | undefined,
    tryOnce: (attempt: number) => Promise<CommandResult<State, Event>>,
  ): Promise<CommandResult<State, Event>> {
    const result = await retryOnConcurrency(tryOnce, { attempts });
    if (result.events.length > 0) this.options.onAppended?.();
    return result;
  }

  private held(from: HeldStream<State>): StreamState<State> {
    return from === NO_STREAM ? { version: 0, state: this.options.decider.initialState() } : from;
  }

  private async decideAndAppend(
    streamId: string,
    from: StreamState<State>,
    commands: Commands<Command>,
    options: { metadata: () => EventMetadata; inTransaction?: InTransaction; inOneStatement?: OneStatementAppend },
  ): Promise<CommandResult<State, Event>> {
    const decided = this.decideInOrder(from.state, commands);
    if (decided.length === 0) return { events: [], version: from.version, state: from.state, previous: from.state };
    const metadata = options.metadata();
    const appended = await this.store.appendToStream(
      streamId,
      this.options.streamType,
      from.version,
      decided.map((event) => ({ type: event.type, data: { ...event.data }, metadata })),
      { inTransaction: options.inTransaction, inOneStatement: options.inOneStatement, stateBefore: from.state },
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
