/**
 * An append as the caller's one statement (AppendOptions.inOneStatement over `<schema>.append_events`): the events
 * are stored as an ordinary append stores them and the caller's statement writes its read model with them; a
 * stale version is the usual ConcurrencyError with nothing written; a failure of the caller's statement leaves
 * nothing either; the inline projections run only for an ordinary append (a statement of null).
 */
import { randomUUID } from 'node:crypto';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { ConcurrencyError } from './concurrency.error';
import type { EventMetadata, NewEvent } from './event.types';
import { appendFunctionMigration, eventStoreMigration } from './event-store.migration';
import { type OneStatementAppend, PostgresEventStore } from './postgres-event-store';

const SCHEMA = 'one_statement_spec';

/** A read model of names (unique), and a function that appends and writes it in one statement. */
class NamesAndAppend1700000000300 implements MigrationInterface {
  name = 'NamesAndAppend1700000000300';
  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE ${SCHEMA}.names (name text PRIMARY KEY, stream_id text NOT NULL)`);
    await runner.query(`
      CREATE FUNCTION ${SCHEMA}.append_named(p_stream_id text, p_stream_type text, p_expected integer, p_events jsonb, p_names jsonb)
        RETURNS TABLE (global_position text, transaction_id text, stream_version integer, created_at timestamptz)
        LANGUAGE plpgsql AS $$
      BEGIN
        RETURN QUERY SELECT * FROM ${SCHEMA}.append_events(p_stream_id, p_stream_type, p_expected, p_events);
        IF NOT FOUND THEN
          RETURN;
        END IF;
        INSERT INTO ${SCHEMA}.names (name, stream_id) SELECT n, p_stream_id FROM jsonb_array_elements_text(p_names) AS n;
      END
      $$`);
  }
  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP FUNCTION ${SCHEMA}.append_named(text, text, integer, jsonb, jsonb)`);
    await runner.query(`DROP TABLE ${SCHEMA}.names`);
  }
}

function named(name: string): NewEvent {
  const metadata: EventMetadata = { correlation_id: randomUUID(), causation_id: null, actor: 'spec' };
  return { type: 'named', data: { name, note: 'a\u0000b' }, metadata };
}

/** The statement: the names of the pending events, as stored. */
const withNames: OneStatementAppend = (pending) => ({
  sql: `SELECT * FROM ${SCHEMA}.append_named($1, $2, $3, $4::jsonb, $5::jsonb)`,
  params: [JSON.stringify(pending.map((event) => event.data.name))],
});

describe('PostgresEventStore: an append in one statement', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: PostgresEventStore;
  let projected = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: SCHEMA,
      migrations: [eventStoreMigration(SCHEMA), appendFunctionMigration(SCHEMA, 1700000000250), NamesAndAppend1700000000300],
      applicationName: 'one-statement-append.int.spec',
      migrate: true,
    });
    store = new PostgresEventStore(dataSource, { schema: SCHEMA, projections: [async (_manager, events) => void (projected += events.length)] });
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  beforeEach(() => {
    projected = 0;
  });

  const namesOf = async (streamId: string): Promise<string[]> =>
    (await dataSource.query(`SELECT name FROM ${SCHEMA}.names WHERE stream_id = $1 ORDER BY name`, [streamId])).map((row: { name: string }) => row.name);

  it('stores the events as an ordinary append does and writes the read model in the same statement', async () => {
    const streamId = randomUUID();
    const first = await store.appendToStream(streamId, 'thing', 0, [named('ann'), named('bob')], { inOneStatement: withNames });
    const second = await store.appendToStream(streamId, 'thing', 2, [named('cy')], { inOneStatement: withNames });
    expect([first.nextVersion, second.nextVersion]).toEqual([2, 3]);
    const read = await store.readStream(streamId);
    expect(read.version).toBe(3);
    expect(read.events).toEqual([...first.events, ...second.events]);
    // As stored: the NUL replaced, as every append does.
    expect(read.events[0].data).toEqual({ name: 'ann', note: 'a\uFFFDb' });
    expect(await namesOf(streamId)).toEqual(['ann', 'bob', 'cy']);
    expect(projected).toBe(0);
  });

  it('refuses a stale version with a ConcurrencyError and writes nothing', async () => {
    const streamId = randomUUID();
    await store.appendToStream(streamId, 'thing', 0, [named('dee')], { inOneStatement: withNames });
    const stale = store.appendToStream(streamId, 'thing', 0, [named('eve')], { inOneStatement: withNames });
    await expect(stale).rejects.toBeInstanceOf(ConcurrencyError);
    await expect(stale).rejects.toMatchObject({ expectedVersion: 0, actualVersion: 1 });
    expect((await store.readStream(streamId)).version).toBe(1);
    expect(await namesOf(streamId)).toEqual(['dee']);
  });

  it('leaves nothing when the caller\'s statement fails after the events went in', async () => {
    const streamId = randomUUID();
    await store.appendToStream(randomUUID(), 'thing', 0, [named('fay')], { inOneStatement: withNames });
    // The name is taken: the insert of the read model fails, and the events with it.
    await expect(store.appendToStream(streamId, 'thing', 0, [named('fay')], { inOneStatement: withNames })).rejects.toThrow(/duplicate key/);
    expect(await store.readStream(streamId)).toEqual({ version: 0, events: [] });
  });

  it('appends the ordinary way, inline projections and all, when the caller gives no statement', async () => {
    const streamId = randomUUID();
    await store.appendToStream(streamId, 'thing', 0, [named('gus')], { inOneStatement: () => null });
    expect(projected).toBe(1);
    expect(await namesOf(streamId)).toEqual([]);
    expect((await store.readStream(streamId)).version).toBe(1);
  });
});
