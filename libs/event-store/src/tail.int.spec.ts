import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import type { NewEvent, StoredEvent } from './event.types';
import { eventStoreMigration } from './event-store.migration';
import { checkpointOf, EventTail } from './event-tail';
import { PostgresEventStore } from './postgres-event-store';

const SCHEMA = 'tail_spec';

function events(count: number): NewEvent[] {
  return Array.from({ length: count }, () => ({
    type: 'ticked',
    data: {},
    metadata: { correlation_id: randomUUID(), causation_id: null, actor: null },
  }));
}

async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** An append whose transaction stays open, after inserting its events, until `commit()`. */
interface HeldAppend {
  stored: StoredEvent[];
  commit(): void;
  committed: Promise<unknown>;
}

async function holdAppend(store: PostgresEventStore, streamId: string, count: number): Promise<HeldAppend> {
  let commit!: () => void;
  const released = new Promise<void>((resolve) => (commit = resolve));
  let inserted!: (stored: StoredEvent[]) => void;
  const insertedEvents = new Promise<StoredEvent[]>((resolve) => (inserted = resolve));
  const committed = store.appendToStream(streamId, 'gap', 0, events(count), {
    inTransaction: async (_manager, stored) => {
      inserted(stored);
      await released;
    },
  });
  return { stored: await insertedEvents, commit, committed };
}

const runningLoops: { stop(): Promise<void> }[] = [];

/** Polls like a relay would: read a page after the checkpoint, remember it, save the checkpoint. */
function startLoop(readPage: () => Promise<{ ids: string[]; advance: () => Promise<void> }>) {
  const seen: string[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const page = await readPage();
      seen.push(...page.ids);
      await page.advance();
      if (page.ids.length === 0) await sleep(2);
    }
  })();
  const loop = {
    seen,
    async stop() {
      running = false;
      await done;
    },
  };
  runningLoops.push(loop);
  return loop;
}

describe('EventTail (gap safety)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: PostgresEventStore;
  let tail: EventTail;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: SCHEMA,
      migrations: [eventStoreMigration(SCHEMA)],
      applicationName: 'tail.int.spec',
      poolSize: 12,
      migrate: true,
    });
    store = new PostgresEventStore(dataSource, { schema: SCHEMA });
    tail = new EventTail(dataSource, SCHEMA);
  });

  /** The newest event in tail order, or the origin (tests in this file leave no transaction open). */
  async function lastEvent(): Promise<Pick<StoredEvent, 'transactionId' | 'globalPosition'>> {
    const rows: { global_position: string; transaction_id: string }[] = await dataSource.query(
      `SELECT global_position::text AS global_position, transaction_id::text AS transaction_id FROM ${SCHEMA}.events
        ORDER BY transaction_id DESC, global_position DESC LIMIT 1`,
    );
    const [row] = rows;
    return row ? { globalPosition: row.global_position, transactionId: row.transaction_id } : { globalPosition: '0', transactionId: '0' };
  }

  // A failed assertion must not leave pollers running against a dropped database.
  afterEach(async () => {
    await Promise.allSettled(runningLoops.splice(0).map((loop) => loop.stop()));
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('sees every event exactly once while transactions commit out of position order; a position reader skips', async () => {
    const checkpointName = `gap-${randomUUID()}`;
    const safe = startLoop(async () => {
      const batch = await tail.readAfter(await tail.loadCheckpoint(checkpointName), 3);
      return {
        ids: batch.map((e) => e.eventId),
        advance: async () => {
          if (batch.length > 0) await tail.saveCheckpoint(checkpointName, batch[batch.length - 1]);
        },
      };
    });
    let naivePosition = '0';
    const naive = startLoop(async () => {
      const rows: { event_id: string; global_position: string }[] = await dataSource.query(
        `SELECT event_id::text AS event_id, global_position::text AS global_position
           FROM ${SCHEMA}.events WHERE global_position > $1 ORDER BY global_position LIMIT 3`,
        [naivePosition],
      );
      return {
        ids: rows.map((r) => r.event_id),
        advance: async () => {
          if (rows.length > 0) naivePosition = rows[rows.length - 1].global_position;
        },
      };
    });

    // Four transactions take positions in order t1 < t2 < t3 < t4 and hold before commit.
    const held: HeldAppend[] = [];
    for (let i = 1; i <= 4; i++) held.push(await holdAppend(store, `gap-t${i}-${randomUUID()}`, 2));
    const [t1, t2, t3, t4] = held;
    const all: string[] = held.flatMap((h) => h.stored.map((e) => e.eventId));
    const ids = (h: HeldAppend | { events: StoredEvent[] }) =>
      ('stored' in h ? h.stored : h.events).map((e) => e.eventId);

    // A quick append commits behind all of them (higher position).
    const quick1 = await store.appendToStream(`gap-q1-${randomUUID()}`, 'gap', 0, events(1));
    all.push(...ids(quick1));
    await eventually(() => naive.seen.includes(ids(quick1)[0]), 'the position reader to pass the held events');
    // The xmin horizon is t1: nothing committed after t1 started may be read yet.
    expect(safe.seen).toEqual([]);

    t3.commit();
    await t3.committed;
    await sleep(30);
    expect(safe.seen).toEqual([]); // t3 is committed but t1 and t2 are older and still open.

    t1.commit();
    await t1.committed;
    await eventually(() => ids(t1).every((id) => safe.seen.includes(id)), 't1 to be tailed');
    expect(safe.seen).toEqual(ids(t1)); // t2 still holds back t3 and the quick append.

    const quick2 = await store.appendToStream(`gap-q2-${randomUUID()}`, 'gap', 0, events(2));
    all.push(...ids(quick2));
    t4.commit();
    await t4.committed;
    await sleep(20);
    t2.commit();
    await t2.committed;

    await eventually(() => all.every((id) => safe.seen.includes(id)), 'every event to be tailed');
    await eventually(() => ids(quick2).every((id) => naive.seen.includes(id)), 'the position reader to catch up');
    await sleep(30); // a few more empty polls: nothing may come twice.
    await Promise.all([safe.stop(), naive.stop()]);

    expect(safe.seen).toHaveLength(all.length);
    expect(new Set(safe.seen)).toEqual(new Set(all));
    const missedByNaive = all.filter((id) => !naive.seen.includes(id));
    expect(missedByNaive.length).toBeGreaterThan(0);
    expect(missedByNaive).toEqual(expect.arrayContaining(ids(t1)));

    const checkpoint = await tail.loadCheckpoint(checkpointName);
    const last = await tail.readAfter(null, all.length);
    expect(checkpoint).toEqual({
      transactionId: last[last.length - 1].transactionId,
      position: last[last.length - 1].globalPosition,
    });
    expect(await tail.readAfter(checkpoint, 10)).toEqual([]);
  });

  it('orders by transaction id: a transaction that took its id first but its position last is not skipped', async () => {
    const checkpointName = `xid-order-${randomUUID()}`;
    const [a, b] = [new pg.Client({ connectionString: db.url }), new pg.Client({ connectionString: db.url })];
    await Promise.all([a.connect(), b.connect()]);
    try {
      await tail.saveCheckpoint(checkpointName, await lastEvent());
      const rawAppend = async (client: pg.Client, streamId: string) => {
        const eventId = randomUUID();
        await client.query(`INSERT INTO ${SCHEMA}.streams (stream_id, stream_type, version) VALUES ($1, 'gap', 1)`, [
          streamId,
        ]);
        await client.query(
          `INSERT INTO ${SCHEMA}.events (stream_id, stream_version, event_id, type, data, metadata)
           VALUES ($1, 1, $2, 'ticked', '{}', '{}')`,
          [streamId, eventId],
        );
        return eventId;
      };

      await a.query('BEGIN');
      await a.query('SELECT pg_current_xact_id()'); // a's transaction id is older than b's ...
      await b.query('BEGIN');
      const fromB = await rawAppend(b, `xid-b-${randomUUID()}`);
      const fromA = await rawAppend(a, `xid-a-${randomUUID()}`); // ... but its position is higher.
      const safe = startLoop(async () => {
        const batch = await tail.readAfter(await tail.loadCheckpoint(checkpointName), 10);
        return {
          ids: batch.map((e) => e.eventId),
          advance: async () => {
            if (batch.length > 0) await tail.saveCheckpoint(checkpointName, batch[batch.length - 1]);
          },
        };
      });
      // What a reader that honours the xmin horizon but orders by position alone would do.
      let positionOnly = (await lastEvent()).globalPosition;
      const horizonOnly = startLoop(async () => {
        const rows: { event_id: string; global_position: string }[] = await dataSource.query(
          `SELECT event_id::text AS event_id, global_position::text AS global_position FROM ${SCHEMA}.events
            WHERE global_position > $1 AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY global_position LIMIT 10`,
          [positionOnly],
        );
        return {
          ids: rows.map((r) => r.event_id),
          advance: async () => {
            if (rows.length > 0) positionOnly = rows[rows.length - 1].global_position;
          },
        };
      });

      await a.query('COMMIT');
      await eventually(() => safe.seen.includes(fromA), "a's event to be tailed");
      await eventually(() => horizonOnly.seen.includes(fromA), "the position-ordered reader to read a's event");
      await b.query('COMMIT');
      await eventually(() => safe.seen.includes(fromB), "b's event to be tailed");
      await sleep(30);
      await Promise.all([safe.stop(), horizonOnly.stop()]);

      expect(safe.seen).toEqual([fromA, fromB]);
      expect(horizonOnly.seen).toEqual([fromA]);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it('says when committed events wait on an older transaction still running, so a woken reader looks again soon', async () => {
    const checkpoint = checkpointOf(await lastEvent());
    const older = new pg.Client({ connectionString: db.url });
    await older.connect();
    try {
      await older.query('BEGIN');
      await older.query('SELECT pg_current_xact_id()'); // an id older than the append below, still running
      const streamId = `held-${randomUUID()}`;
      await store.appendToStream(streamId, 'gap', 0, events(1));
      await expect(tail.readBatchAfter(checkpoint, 10)).resolves.toEqual({ events: [], heldBack: true });
      await older.query('COMMIT');
      // (A transaction of another test file, elsewhere in the cluster, may hold it a moment longer.)
      await eventually(async () => (await tail.readBatchAfter(checkpoint, 10)).events.length > 0, 'the event once the older transaction committed');
      expect((await tail.readBatchAfter(checkpoint, 10)).events.map((event) => event.streamId)).toEqual([streamId]);
    } finally {
      await older.end();
    }
  });

  it('reads in (transaction_id, global_position) order and pages by checkpoint', async () => {
    const checkpointName = `paging-${randomUUID()}`;
    const before = await tail.readAfter(null, 1_000);
    const start = before.length > 0 ? before[before.length - 1] : null;
    const appended = await Promise.all(
      Array.from({ length: 5 }, () => store.appendToStream(`page-${randomUUID()}`, 'gap', 0, events(3))),
    );
    const expected = appended.flatMap((r) => r.events).map((e) => e.eventId);

    const read: StoredEvent[] = [];
    let checkpoint = start && { transactionId: start.transactionId, position: start.globalPosition };
    if (start) await tail.saveCheckpoint(checkpointName, start);
    // The tail waits for the cluster-wide snapshot horizon, so a transaction of another test on the same server
    // may hold the events back for a moment: an empty page means "not yet", until every event is read.
    const deadline = Date.now() + 10_000;
    while (read.length < expected.length && Date.now() < deadline) {
      const page = await tail.readAfter(checkpoint, 4);
      if (page.length === 0) {
        await sleep(20);
        continue;
      }
      read.push(...page);
      await tail.saveCheckpoint(checkpointName, page[page.length - 1]);
      checkpoint = await tail.loadCheckpoint(checkpointName);
    }
    expect(new Set(read.map((e) => e.eventId))).toEqual(new Set(expected));
    expect(read).toHaveLength(expected.length);
    for (let i = 1; i < read.length; i++) {
      const [a, b] = [read[i - 1], read[i]];
      const ordered =
        BigInt(a.transactionId) < BigInt(b.transactionId) ||
        (a.transactionId === b.transactionId && BigInt(a.globalPosition) < BigInt(b.globalPosition));
      expect(ordered).toBe(true);
    }
    expect(await tail.countAfter(checkpoint)).toBe(0);
  });

  it('never moves a checkpoint backwards', async () => {
    const name = `monotonic-${randomUUID()}`;
    await tail.saveCheckpoint(name, { transactionId: '900', globalPosition: '50' });
    await tail.saveCheckpoint(name, { transactionId: '800', globalPosition: '70' });
    expect(await tail.loadCheckpoint(name)).toEqual({ transactionId: '900', position: '50' });
    await tail.saveCheckpoint(name, { transactionId: '900', globalPosition: '51' });
    expect(await tail.loadCheckpoint(name)).toEqual({ transactionId: '900', position: '51' });
  });
});
