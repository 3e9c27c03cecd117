import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import type { StoredEvent } from './event.types';
import { eventStoreMigration } from './event-store.migration';
import { PostgresEventStore } from './postgres-event-store';
import { type StreamFold, StreamStates } from './stream-states';

const SCHEMA = 'states_spec';

/** A counter whose events add their `n`; version 1 of `added` called it `amount`. */
const fold: StreamFold<number> = {
  initialState: () => 0,
  evolve: (total, event) => total + Number(event.data['n']),
  upcasters: [{ type: 'added', fromVersion: 1, upcast: ({ amount, ...rest }) => ({ ...rest, n: amount }) }],
};

describe('StreamStates', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: SCHEMA,
      migrations: [eventStoreMigration(SCHEMA, 1700000000100)],
      applicationName: 'stream-states.int.spec',
      migrate: true,
    });
    store = new PostgresEventStore(dataSource, { schema: SCHEMA });
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  /** A stream of `added` events: the first two stored in version 1's shape, the rest in version 2's. */
  async function counter(amounts: number[]): Promise<StoredEvent[]> {
    const streamId = `counter-${randomUUID()}`;
    const metadata = { correlation_id: randomUUID(), causation_id: null, actor: null };
    const { events } = await store.appendToStream(
      streamId,
      'counter',
      0,
      amounts.map((n, index) =>
        index < 2 ? { type: 'added', data: { amount: n }, metadata } : { type: 'added', data: { n }, schemaVersion: 2, metadata },
      ),
    );
    return events;
  }

  /** The manager, counting the queries made through it. */
  function countingReader(): { reader: EntityManager; queries: () => number } {
    let count = 0;
    const reader = new Proxy(dataSource.manager, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return (...args: Parameters<EntityManager['query']>) => {
          count += 1;
          return target.query(...args);
        };
      },
    });
    return { reader, queries: () => count };
  }

  it('folds the stored events before a version, upcast, and each event onto it', async () => {
    const events = await counter([1, 2, 4, 8]);
    const states = new StreamStates(SCHEMA, fold);
    expect(await states.before(dataSource.manager, events[0].streamId, 1)).toBe(0);
    expect(await states.before(dataSource.manager, events[0].streamId, 4)).toBe(7);
    const step = await states.step(dataSource.manager, events[1]);
    expect(step).toMatchObject({ before: 1, after: 3, event: { schemaVersion: 2, data: { n: 2 } } });
  });

  it('remembers the latest state of a stream, so a tail reading it in order folds each event once', async () => {
    const events = await counter([1, 2, 4, 8]);
    const states = new StreamStates(SCHEMA, fold, 10);
    const { reader, queries } = countingReader();
    const totals = [];
    for (const event of events) totals.push((await states.step(reader, event)).after);
    expect(totals).toEqual([1, 3, 7, 15]);
    expect(queries()).toBe(1);
    // Read again from an earlier point (a relay restarting from its checkpoint): folded from the store.
    expect((await states.step(reader, events[2])).after).toBe(7);
    expect(queries()).toBe(2);
  });

  it('remembers only as many streams as it is told, and nothing when told none', async () => {
    const [a, b] = [await counter([1, 1]), await counter([2, 2])];
    const lru = new StreamStates(SCHEMA, fold, 1);
    const { reader, queries } = countingReader();
    await lru.step(reader, a[0]);
    await lru.step(reader, b[0]);
    await lru.step(reader, a[1]);
    expect(queries()).toBe(3);

    const forgetful = new StreamStates(SCHEMA, fold);
    const counted = countingReader();
    await forgetful.step(counted.reader, a[0]);
    await forgetful.step(counted.reader, a[1]);
    expect(counted.queries()).toBe(2);
  });
});
