// Longer than 300 lines on purpose: every way into the one append path against one tally decider and one counting store.
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { DomainError } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { CommandHandler, type LoadedStream, NO_STREAM } from './command-handler';
import { ConcurrencyError } from './concurrency.error';
import type { Decider } from './decider';
import type { EventMetadata } from './event.types';
import { eventStoreMigration } from './event-store.migration';
import { PostgresEventStore, type StreamSnapshot } from './postgres-event-store';

const SCHEMA = 'command_handler_spec';

/** A tally that takes notes until it is closed: small, but it refuses, chains and carries text. */
type TallyCommand = { type: 'Add'; n: number; note: string } | { type: 'Close' };
type TallyEvent = { type: 'Added'; data: { n: number; note: string } } | { type: 'Closed'; data: { total: number } };
interface Tally {
  total: number;
  notes: string[];
  closed: boolean;
}

const tally: Decider<Tally, TallyCommand, TallyEvent> = {
  initialState: () => ({ total: 0, notes: [], closed: false }),
  evolve: (state, event) =>
    event.type === 'Added'
      ? { ...state, total: state.total + event.data.n, notes: [...state.notes, event.data.note] }
      : { ...state, closed: true },
  decide: (command, state) => {
    if (state.closed) throw new DomainError('intern_busy', 'the tally is closed');
    if (command.type === 'Add') return command.n === 0 ? [] : [{ type: 'Added', data: { n: command.n, note: command.note } }];
    return [{ type: 'Closed', data: { total: state.total } }];
  },
};

const add = (n: number, note = `+${n}`): TallyCommand => ({ type: 'Add', n, note });
const METADATA: EventMetadata = { correlation_id: 'c-1', causation_id: null, actor: 'spec' };

/**
 * The real store, counting how often a whole stream (or its version alone) is read, and letting another writer in
 * after a read.
 */
class CountingStore extends PostgresEventStore {
  reads = 0;
  versionReads = 0;
  /** How many of the next reads another writer follows with an append of its own (the reader is then behind). */
  interferences = 0;

  override async readStream(streamId: string): Promise<StreamSnapshot> {
    this.reads++;
    const snapshot = await super.readStream(streamId);
    await this.interfere(streamId, snapshot.version);
    return snapshot;
  }

  override async streamVersion(streamId: string): Promise<number> {
    this.versionReads++;
    const version = await super.streamVersion(streamId);
    await this.interfere(streamId, version);
    return version;
  }

  private async interfere(streamId: string, version: number): Promise<void> {
    if (this.interferences === 0) return;
    this.interferences--;
    const other = { type: 'Added', data: { n: 10, note: 'other' }, metadata: METADATA };
    await this.appendToStream(streamId, 'tally', version, [other]);
  }
}

describe('CommandHandler', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: CountingStore;
  let appended: number;
  let tallies: CommandHandler<Tally, TallyCommand, TallyEvent>;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: SCHEMA,
      migrations: [eventStoreMigration(SCHEMA)],
      applicationName: 'command-handler.int.spec',
      migrate: true,
    });
    store = new CountingStore(dataSource, { schema: SCHEMA });
    tallies = new CommandHandler(store, { decider: tally, streamType: 'tally', onAppended: () => appended++ });
  });

  beforeEach(() => {
    appended = 0;
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  const streamId = () => `tally-${randomUUID()}`;

  it('appends what the decider decided at the loaded version and returns the state a reload builds, and the one it decided on', async () => {
    const id = streamId();
    const first = await tallies.handle(id, add(2), { metadata: METADATA });
    const second = await tallies.handle(id, add(3), { metadata: METADATA });

    expect(first).toEqual({
      events: [{ type: 'Added', data: { n: 2, note: '+2' } }],
      version: 1,
      state: { total: 2, notes: ['+2'], closed: false },
      previous: { total: 0, notes: [], closed: false },
    });
    expect(second.version).toBe(2);
    expect(second.previous).toEqual(first.state);
    const reloaded = await tallies.load(id);
    expect(reloaded).toMatchObject({ version: 2, state: second.state });
    expect(reloaded.events.map((event) => [event.streamVersion, event.metadata])).toEqual([
      [1, METADATA],
      [2, METADATA],
    ]);
    expect(appended).toBe(2);
  });

  it('decides several commands in order, each on what the previous left, and appends them at once', async () => {
    const id = streamId();
    const result = await tallies.handle(id, [add(1), add(4), { type: 'Close' }], { metadata: METADATA });

    expect(result.events.map((event) => event.type)).toEqual(['Added', 'Added', 'Closed']);
    expect(result.events[2].data).toEqual({ total: 5 });
    const { events } = await tallies.load(id);
    expect(new Set(events.map((event) => event.transactionId)).size).toBe(1);
    expect(appended).toBe(1);
  });

  it('appends nothing when a later command is refused', async () => {
    const id = streamId();
    await tallies.handle(id, { type: 'Close' }, { metadata: METADATA });

    await expect(tallies.handle(id, [add(1)], { metadata: METADATA })).rejects.toMatchObject({ reason: 'intern_busy' });
    const other = streamId();
    await expect(tallies.handle(other, [add(1), { type: 'Close' }, add(2)], { metadata: METADATA })).rejects.toBeInstanceOf(DomainError);
    expect((await tallies.load(other)).version).toBe(0);
  });

  it('chooses the command from what it loaded, or nothing, and computes the metadata from it', async () => {
    const id = streamId();
    await tallies.handle(id, add(5), { metadata: METADATA });
    appended = 0;

    const unchanged = await tallies.handle(id, (loaded) => (loaded.state.total >= 5 ? null : add(1)), { metadata: METADATA });
    expect(unchanged).toMatchObject({ events: [], version: 1, state: { total: 5 } });
    const undecided = await tallies.handle(id, add(0), { metadata: METADATA });
    expect(undecided).toMatchObject({ events: [], version: 1 });
    expect(appended).toBe(0);

    const causedBy = (loaded: LoadedStream<Tally>): EventMetadata => ({
      correlation_id: loaded.events[0].metadata.correlation_id,
      causation_id: loaded.events[loaded.events.length - 1].eventId,
      actor: null,
    });
    await tallies.handle(id, (loaded) => add(loaded.state.total), { metadata: causedBy });
    const { events, state } = await tallies.load(id);
    expect(state.total).toBe(10);
    expect(events[1].metadata).toEqual({ correlation_id: 'c-1', causation_id: events[0].eventId, actor: null });
  });

  it('runs inTransaction with the stored events in the append transaction; throwing there appends nothing', async () => {
    const id = streamId();
    const seen: { versions: number[]; txid: string }[] = [];
    await tallies.handle(id, [add(1), add(2)], {
      metadata: METADATA,
      inTransaction: async (manager, stored) => {
        const [{ txid }] = await manager.query(`SELECT pg_current_xact_id()::text AS txid`);
        seen.push({ versions: stored.map((event) => event.streamVersion), txid });
      },
    });
    const { events } = await tallies.load(id);
    expect(seen).toEqual([{ versions: [1, 2], txid: events[0].transactionId }]);

    const refused = tallies.handle(id, add(3), {
      metadata: METADATA,
      inTransaction: async () => {
        throw new Error('limit reached');
      },
    });
    await expect(refused).rejects.toThrow('limit reached');
    expect((await tallies.load(id)).version).toBe(2);
  });

  it('loads and decides again when another writer appended in between, a bounded number of times', async () => {
    const id = streamId();
    await tallies.handle(id, add(1), { metadata: METADATA });
    store.interferences = 1;
    const tried: number[] = [];
    const result = await tallies.handle(
      id,
      (loaded) => (tried.push(loaded.state.total), add(1, `after ${loaded.state.total}`)),
      { metadata: METADATA },
    );
    expect(tried).toEqual([1, 11]);
    expect(result).toMatchObject({ version: 3, state: { notes: ['+1', 'other', 'after 11'] } });

    const twice = new CommandHandler(store, { decider: tally, streamType: 'tally', attempts: 2 });
    store.interferences = 2;
    await expect(twice.handle(id, add(1, 'mine'), { metadata: METADATA })).rejects.toBeInstanceOf(ConcurrencyError);
    const { state } = await tallies.load(id);
    expect(state.notes.filter((note) => note === 'mine')).toEqual([]);
    expect(state.notes.filter((note) => note === 'other')).toHaveLength(3);
  });

  it('decides on a state the caller holds without reading, and lets a conflict propagate', async () => {
    const id = streamId();
    const started = await tallies.handle(id, add(1), { metadata: METADATA });
    store.reads = 0;

    const next = await tallies.handleAt(id, started, add(2), { metadata: METADATA });
    const after = await tallies.handleAt(id, next, [add(3), add(4)], { metadata: METADATA });
    expect(store.reads).toBe(0);
    expect(after).toMatchObject({ version: 4, state: (await tallies.load(id)).state });

    const stale = tallies.handleAt(id, started, add(5), { metadata: METADATA });
    await expect(stale).rejects.toBeInstanceOf(ConcurrencyError);
    await expect(stale).rejects.toMatchObject({ expectedVersion: 1, actualVersion: 4 });
    expect((await tallies.load(id)).version).toBe(4);

    const created = await tallies.handleAt(streamId(), { version: 0, state: tally.initialState() }, add(7), { metadata: METADATA });
    expect(created).toMatchObject({ version: 1, state: { total: 7 } });
  });

  it('decides first on a state the caller holds without reading; after a conflict loads once, tells onReloaded and decides again', async () => {
    const id = streamId();
    const started = await tallies.handle(id, add(1), { metadata: METADATA });
    store.reads = 0;
    appended = 0;

    const held = await tallies.handleFrom(id, started, add(2), { metadata: METADATA });
    expect(store.reads).toBe(0);
    expect(held).toMatchObject({ version: 2, state: { total: 3 } });

    await tallies.handle(id, add(10, 'other'), { metadata: METADATA });
    store.reads = 0;
    const reloaded: LoadedStream<Tally>[] = [];
    const caughtUp = await tallies.handleFrom(id, held, add(4), { metadata: METADATA, onReloaded: (loaded) => reloaded.push(loaded) });
    expect(store.reads).toBe(1);
    expect(reloaded.map(({ version, state }) => ({ version, total: state.total }))).toEqual([{ version: 3, total: 13 }]);
    expect(caughtUp).toMatchObject({ version: 4, previous: { total: 13 }, state: (await tallies.load(id)).state });
    expect(appended).toBe(3);
  });

  it('lets a refusal after catching up propagate, with onReloaded told of the stream as it is', async () => {
    const id = streamId();
    const open = await tallies.handle(id, add(1), { metadata: METADATA });
    await tallies.handle(id, { type: 'Close' }, { metadata: METADATA });

    const seen: LoadedStream<Tally>[] = [];
    const refused = tallies.handleFrom(id, open, add(2), { metadata: METADATA, onReloaded: (loaded) => seen.push(loaded) });
    await expect(refused).rejects.toMatchObject({ reason: 'intern_busy' });
    expect(seen.map(({ version, state }) => ({ version, closed: state.closed }))).toEqual([{ version: 2, closed: true }]);
    expect((await tallies.load(id)).version).toBe(2);
  });

  it('gives up a held state after the bounded number of conflicts, appending nothing of its own', async () => {
    const id = streamId();
    const stale = await tallies.handle(id, add(1), { metadata: METADATA });
    await tallies.handle(id, add(1), { metadata: METADATA });
    const twice = new CommandHandler(store, { decider: tally, streamType: 'tally', attempts: 2 });
    store.interferences = 1;

    await expect(twice.handleFrom(id, stale, add(1, 'mine'), { metadata: METADATA })).rejects.toBeInstanceOf(ConcurrencyError);
    const { version, state } = await tallies.load(id);
    expect(version).toBe(3);
    expect(state.notes).toEqual(['+1', '+1', 'other']);
  });

  it('creates a stream expected not to exist without reading it; when it exists after all, decides on it as loaded', async () => {
    const id = streamId();
    store.reads = 0;
    const created = await tallies.handleFrom(id, NO_STREAM, add(7), { metadata: METADATA });
    expect(store.reads).toBe(0);
    expect(created).toMatchObject({ version: 1, previous: tally.initialState(), state: { total: 7 } });

    const existing = await tallies.handleFrom(id, NO_STREAM, add(1), { metadata: METADATA });
    expect(store.reads).toBe(1);
    expect(existing).toMatchObject({ version: 2, previous: { total: 7 }, state: { total: 8 } });

    const once = tallies.handleAt(id, NO_STREAM, add(1), { metadata: METADATA });
    await expect(once).rejects.toMatchObject({ expectedVersion: 0, actualVersion: 2 });
  });

  it('appends at the head reading the version alone, again on a race, and inside the append transaction', async () => {
    const id = streamId();
    const fresh = await tallies.handleAtHead(id, add(1), { metadata: METADATA });
    expect(fresh).toMatchObject({ version: 1, events: [{ type: 'Added', data: { n: 1, note: '+1' } }] });
    await tallies.handle(id, add(2), { metadata: METADATA });
    store.reads = 0;
    store.versionReads = 0;
    appended = 0;

    const logged = await tallies.handleAtHead(id, add(3), { metadata: METADATA });
    expect(logged).toMatchObject({ version: 3, previous: tally.initialState(), state: { total: 3 } });
    store.interferences = 1;
    const raced = await tallies.handleAtHead(id, add(4), { metadata: METADATA });
    expect(raced.version).toBe(5);
    expect(store.reads).toBe(0);
    expect(store.versionReads).toBe(3);
    expect(appended).toBe(2);
    expect((await tallies.load(id)).state.notes).toEqual(['+1', '+2', '+3', 'other', '+4']);

    const refused = tallies.handleAtHead(id, add(5), {
      metadata: METADATA,
      inTransaction: async () => {
        throw new Error('not recorded');
      },
    });
    await expect(refused).rejects.toThrow('not recorded');
    expect(await store.streamVersion(id)).toBe(5);
  });

  it('returns events and state in their stored form, as a reload would see them', async () => {
    const id = streamId();
    const result = await tallies.handle(id, add(1, 'before\u0000after'), { metadata: METADATA });

    expect(result.events).toEqual([{ type: 'Added', data: { n: 1, note: 'before\uFFFDafter' } }]);
    expect(result.state).toEqual((await tallies.load(id)).state);
  });
});
