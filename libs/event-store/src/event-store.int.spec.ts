// Longer than 300 lines on purpose: the store's whole contract (append, read, version, conflicts, replays, sizes) on one schema.
import { randomUUID } from 'node:crypto';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { ConcurrencyError, retryOnConcurrency } from './concurrency.error';
import type { EventMetadata, NewEvent, StoredEvent } from './event.types';
import { EventTooLargeError } from './event-size';
import { eventStoreMigration } from './event-store.migration';
import { type InlineProjection, PostgresEventStore } from './postgres-event-store';

const SCHEMA = 'event_store_spec';

/** A read model whose primary key the projection below can violate on purpose. */
class CreateNames1700000000200 implements MigrationInterface {
  name = 'CreateNames1700000000200';
  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE ${SCHEMA}.names (name text PRIMARY KEY, stream_id text NOT NULL)`);
  }
  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE ${SCHEMA}.names`);
  }
}

const namesProjection: InlineProjection = async (manager, events) => {
  for (const event of events) {
    if (event.type === 'named') {
      await manager.query(`INSERT INTO ${SCHEMA}.names (name, stream_id) VALUES ($1, $2)`, [
        event.data.name,
        event.streamId,
      ]);
    }
  }
};

function metadata(): EventMetadata {
  return { correlation_id: randomUUID(), causation_id: null, actor: 'spec' };
}

function event(type: string, data: Record<string, unknown>, eventId?: string): NewEvent {
  return { eventId, type, data, metadata: metadata() };
}

/** Resolves for everyone once `count` callers have arrived. */
function barrier(count: number): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return () => {
    arrived += 1;
    if (arrived === count) open();
    return opened;
  };
}

describe('PostgresEventStore', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: SCHEMA,
      migrations: [eventStoreMigration(SCHEMA), CreateNames1700000000200],
      applicationName: 'event-store.int.spec',
      poolSize: 20,
      migrate: true,
    });
    store = new PostgresEventStore(dataSource, { schema: SCHEMA, projections: [namesProjection] });
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  async function countEvents(streamId: string): Promise<number> {
    const rows = await dataSource.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.events WHERE stream_id = $1`, [
      streamId,
    ]);
    return rows[0].n;
  }

  it('reads a missing stream as version 0', async () => {
    expect(await store.readStream(`missing-${randomUUID()}`)).toEqual({ version: 0, events: [] });
  });

  it('tells a stream\'s version alone: 0 when missing, its head after appends, unchanged by a rolled-back append', async () => {
    const streamId = `intern-${randomUUID()}`;
    expect(await store.streamVersion(streamId)).toBe(0);

    await store.appendToStream(streamId, 'intern', 0, [event('created', {}), event('renamed', { to: 'a' })]);
    expect(await store.streamVersion(streamId)).toBe(2);

    const failing = { inTransaction: async () => Promise.reject(new Error('rolled back')) };
    await expect(store.appendToStream(streamId, 'intern', 2, [event('renamed', { to: 'b' })], failing)).rejects.toThrow('rolled back');
    expect(await store.streamVersion(streamId)).toBe(2);
    expect(await store.streamVersion(streamId)).toBe((await store.readStream(streamId)).version);
  });

  it('appends and reads back with positions, transaction id and metadata', async () => {
    const streamId = `intern-${randomUUID()}`;
    const meta = metadata();
    const first = await store.appendToStream(streamId, 'intern', 0, [
      { type: 'created', data: { at: new Date(0) }, metadata: meta },
      { type: 'renamed', data: { to: 'b' }, metadata: meta, schemaVersion: 2 },
    ]);
    expect(first.nextVersion).toBe(2);
    expect(first.events.map((e) => e.streamVersion)).toEqual([1, 2]);
    expect(first.events[0].transactionId).toBe(first.events[1].transactionId);
    expect(BigInt(first.events[1].globalPosition)).toBeGreaterThan(BigInt(first.events[0].globalPosition));

    const read = await store.readStream(streamId);
    expect(read.version).toBe(2);
    expect(read.events).toEqual(first.events);
    expect(read.events[0].data).toEqual({ at: '1970-01-01T00:00:00.000Z' });
    expect(read.events[1]).toMatchObject({ streamType: 'intern', schemaVersion: 2, metadata: meta });
  });

  it('16 concurrent appenders: one winner per version, versions 1..16 without gaps or duplicates', async () => {
    const streamId = `counter-${randomUUID()}`;
    const everyoneHasRead = barrier(16);
    let conflicts = 0;
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, appender) =>
        retryOnConcurrency(
          async (attempt) => {
            const { version } = await store.readStream(streamId);
            // All 16 start from the same version, so the first round is a real race.
            if (attempt === 1) await everyoneHasRead();
            return store.appendToStream(streamId, 'counter', version, [event('incremented', { appender })]);
          },
          // Each failed attempt means another appender won a version, so 16 attempts always suffice.
          { attempts: 16, onConflict: () => (conflicts += 1) },
        ),
      ),
    );

    expect(results.map((r) => r.nextVersion).sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(conflicts).toBeGreaterThanOrEqual(15);

    const { version, events } = await store.readStream(streamId);
    expect(version).toBe(16);
    expect(events.map((e) => e.streamVersion)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(new Set(events.map((e) => e.data.appender)).size).toBe(16);
    const duplicates = await dataSource.query(
      `SELECT stream_version FROM ${SCHEMA}.events WHERE stream_id = $1 GROUP BY stream_version HAVING count(*) > 1`,
      [streamId],
    );
    expect(duplicates).toEqual([]);
  });

  it('raises a typed ConcurrencyError carrying expected and actual versions', async () => {
    const streamId = `intern-${randomUUID()}`;
    await store.appendToStream(streamId, 'intern', 0, [event('created', {})]);

    const newStreamTwice = await store.appendToStream(streamId, 'intern', 0, [event('created', {})]).catch((e) => e);
    expect(newStreamTwice).toBeInstanceOf(ConcurrencyError);
    expect(newStreamTwice).toMatchObject({ streamId, expectedVersion: 0, actualVersion: 1 });

    const ahead = await store.appendToStream(streamId, 'intern', 3, [event('renamed', {})]).catch((e) => e);
    expect(ahead).toBeInstanceOf(ConcurrencyError);
    expect(ahead).toMatchObject({ streamId, expectedVersion: 3, actualVersion: 1 });

    const missing = await store.appendToStream(`missing-${randomUUID()}`, 'intern', 2, [event('x', {})]).catch((e) => e);
    expect(missing).toBeInstanceOf(ConcurrencyError);
    expect(missing).toMatchObject({ expectedVersion: 2, actualVersion: 0 });

    expect(await store.readStream(streamId)).toMatchObject({ version: 1 });
  });

  it('treats a retried append with the same event ids as done and writes nothing new', async () => {
    const streamId = `intern-${randomUUID()}`;
    await store.appendToStream(streamId, 'intern', 0, [event('created', {})]);
    const ids = [randomUUID(), randomUUID()];
    const batch = () => [event('renamed', { to: 'a' }, ids[0]), event('renamed', { to: 'b' }, ids[1])];

    const first = await store.appendToStream(streamId, 'intern', 1, batch());
    const retry = await store.appendToStream(streamId, 'intern', 1, batch());
    const retryAfterReload = await store.appendToStream(streamId, 'intern', 3, batch());

    expect(retry).toEqual(first);
    expect(retryAfterReload).toEqual(first);
    expect(first.nextVersion).toBe(3);
    expect(await countEvents(streamId)).toBe(3);
    expect((await store.readStream(streamId)).version).toBe(3);
  });

  it('concurrent retries of one append all report the same committed events', async () => {
    const streamId = `intern-${randomUUID()}`;
    const id = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 6 }, () => store.appendToStream(streamId, 'intern', 0, [event('created', {}, id)])),
    );
    for (const result of results) expect(result).toEqual(results[0]);
    expect(await countEvents(streamId)).toBe(1);
  });

  it('refuses an event id that already belongs to another stream', async () => {
    const id = randomUUID();
    await store.appendToStream(`intern-${randomUUID()}`, 'intern', 0, [event('created', {}, id)]);
    const otherStream = `intern-${randomUUID()}`;
    await expect(store.appendToStream(otherStream, 'intern', 0, [event('created', {}, id)])).rejects.toThrow(
      /already appended to stream/,
    );
    expect(await countEvents(otherStream)).toBe(0);
  });

  it('rolls the append back when an inline projection fails, and propagates its error', async () => {
    const name = `name-${randomUUID()}`;
    const owner = `intern-${randomUUID()}`;
    await store.appendToStream(owner, 'intern', 0, [event('named', { name })]);

    // New stream: the projection's unique violation undoes the stream row and the events.
    const rival = `intern-${randomUUID()}`;
    const onNewStream = await store.appendToStream(rival, 'intern', 0, [event('named', { name })]).catch((e) => e);
    expect(onNewStream).toMatchObject({ code: '23505', constraint: 'names_pkey' });
    expect(await store.readStream(rival)).toEqual({ version: 0, events: [] });
    expect(await countEvents(rival)).toBe(0);

    // Existing stream: the version stays where it was.
    const other = `intern-${randomUUID()}`;
    await store.appendToStream(other, 'intern', 0, [event('created', {})]);
    const onExisting = await store
      .appendToStream(other, 'intern', 1, [event('renamed', {}), event('named', { name })])
      .catch((e) => e);
    expect(onExisting).toMatchObject({ code: '23505', constraint: 'names_pkey' });
    expect((await store.readStream(other)).version).toBe(1);
    expect(await countEvents(other)).toBe(1);
  });

  it('runs inTransaction with the same transaction and rolls back on its error', async () => {
    const streamId = `intern-${randomUUID()}`;
    const boom = new Error('process manager failed');
    const failed = store.appendToStream(streamId, 'intern', 0, [event('created', {})], {
      inTransaction: async (manager, stored) => {
        const seen = await manager.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.events WHERE stream_id = $1`, [
          streamId,
        ]);
        expect(seen[0].n).toBe(stored.length);
        throw boom;
      },
    });
    await expect(failed).rejects.toBe(boom);
    expect(await countEvents(streamId)).toBe(0);
  });

  it('stores NUL in data and metadata as U+FFFD, and projections and readers see that', async () => {
    const streamId = `intern-${randomUUID()}`;
    const name = `nul\u0000name-${randomUUID()}`;
    const stored = `nul\uFFFDname-${name.slice('nul\u0000name-'.length)}`;
    const data = {
      name,
      output: 'a\u0000b\u0000\u0000c',
      // The six characters of an escape, not a NUL: kept as they are.
      escaped: '\\u0000',
      nested: { list: ['x\u0000', 1, null, { 'key\u0000': 'value\u0000' }] },
    };
    const meta: EventMetadata = { ...metadata(), actor: 'spec\u0000actor', note: '\u0000' };

    const appended = await store.appendToStream(streamId, 'intern', 0, [{ type: 'named', data, metadata: meta }]);

    const expectedData = {
      name: stored,
      output: 'a\uFFFDb\uFFFD\uFFFDc',
      escaped: '\\u0000',
      nested: { list: ['x\uFFFD', 1, null, { 'key\uFFFD': 'value\uFFFD' }] },
    };
    const expectedMetadata = { ...meta, actor: 'spec\uFFFDactor', note: '\uFFFD' };
    expect(appended.events[0]).toMatchObject({ data: expectedData, metadata: expectedMetadata });
    expect((await store.readStream(streamId)).events[0]).toMatchObject({ data: expectedData, metadata: expectedMetadata });
    // The inline projection wrote the replaced name into a text column.
    const projected = await dataSource.query(`SELECT name FROM ${SCHEMA}.names WHERE stream_id = $1`, [streamId]);
    expect(projected).toEqual([{ name: stored }]);
    // What the caller handed in is left as it was.
    expect(data.output).toBe('a\u0000b\u0000\u0000c');
  });

  it('upcasts old event shapes on read', async () => {
    const streamId = `intern-${randomUUID()}`;
    await store.appendToStream(streamId, 'intern', 0, [event('created', { name: 'Ada Lovelace' })]);
    const upcasting = new PostgresEventStore(dataSource, {
      schema: SCHEMA,
      upcasters: [
        {
          type: 'created',
          fromVersion: 1,
          upcast: ({ name, ...rest }) => ({ ...rest, display_name: name }),
        },
      ],
    });
    const { events } = await upcasting.readStream(streamId);
    expect(events[0]).toMatchObject({ schemaVersion: 2, data: { display_name: 'Ada Lovelace' } });
  });

  describe('MAX_EVENT_BYTES', () => {
    const limit = 8192;
    let small: PostgresEventStore;
    let projected: StoredEvent[];

    beforeAll(() => {
      small = new PostgresEventStore(dataSource, {
        schema: SCHEMA,
        maxEventBytes: limit,
        projections: [async (_manager, events) => void projected.push(...events)],
      });
    });
    beforeEach(() => (projected = []));

    it('stores an event over the limit with its longest text cut and marked; projections and readers see the cut form', async () => {
      const streamId = `big-${randomUUID()}`;
      const output = 'o'.repeat(50_000);
      const appended = await small.appendToStream(streamId, 'session', 0, [event('ToolFinished', { runId: 'r1', output })]);

      const stored = appended.events[0].data as { runId: string; output: string };
      expect(stored.runId).toBe('r1');
      expect(stored.output).toMatch(/^o+… \[truncated \d+ bytes\]$/);
      const [row] = await dataSource.query(`SELECT data, metadata FROM ${SCHEMA}.events WHERE stream_id = $1`, [streamId]);
      // Compact JSON, as the limit counts it (jsonb's text form adds a space after each colon and comma).
      const bytes = Buffer.byteLength(JSON.stringify(row.data)) + Buffer.byteLength(JSON.stringify(row.metadata));
      expect(bytes).toBeLessThanOrEqual(limit);
      expect(projected.map((e) => e.data)).toEqual([stored]);
      expect((await small.readStream(streamId)).events[0].data).toEqual(stored);
    });

    it('refuses an event that cannot be brought under the limit, and stores nothing of its append', async () => {
      const streamId = `refused-${randomUUID()}`;
      const many = { items: Array.from({ length: 20 }, (_, i) => `${i}:${'s'.repeat(900)}`) };
      await expect(
        small.appendToStream(streamId, 'session', 0, [event('Fine', { a: 1 }), event('Many', many)]),
      ).rejects.toThrow(EventTooLargeError);
      expect(await countEvents(streamId)).toBe(0);
      expect(projected).toEqual([]);
    });
  });
});
