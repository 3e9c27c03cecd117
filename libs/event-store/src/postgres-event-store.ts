// Longer than 300 lines on purpose: every way an append is written (a transaction, the caller's one statement, a replay) in the one class that owns the tables.
import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { isUniqueViolation, pgErrorFields, poolOf } from '@interns/database';
import { ConcurrencyError } from './concurrency.error';
import type { NewEvent, StoredEvent } from './event.types';
import {
  EVENT_COLUMNS,
  EVENT_ID_CONSTRAINT,
  type EventRow,
  type EventStoreTables,
  eventStoreTables,
  toStoredEvent,
} from './event-store.sql';
import { DEFAULT_MAX_EVENT_BYTES, storableEventData } from './event-size';
import { toStorableJson } from './storable-json';
import { type Upcaster, upcasterChain, type UpcastFn } from './upcaster';

/**
 * Updates a read model inside the append's transaction; throwing rolls the append back. `context.stateBefore` is the
 * stream's state just before these events as the appending decider held it (absent for a replayed batch): a
 * projection that folds the aggregate's state takes it instead of reading the stream's earlier events again.
 */
export type InlineProjection = (manager: EntityManager, events: StoredEvent[], context?: ProjectionContext) => Promise<void>;

export interface ProjectionContext {
  stateBefore?: unknown;
}

export interface EventStoreOptions {
  schema: string;
  projections?: InlineProjection[];
  /** Applied by `readStream`; appends store what they are given. */
  upcasters?: Upcaster[];
  /** MAX_EVENT_BYTES: an event's data and metadata JSON together; longer text is cut before it is stored. */
  maxEventBytes?: number;
}

export interface AppendOptions {
  /** Runs after the inline projections with the same transaction (e.g. a process manager's bookkeeping). */
  inTransaction?: (manager: EntityManager, stored: StoredEvent[]) => Promise<void>;
  /** The stream's state at `expectedVersion` as the appending decider folded it; handed to the inline projections. */
  stateBefore?: unknown;
  /**
   * The whole append as one statement, one round trip and no BEGIN/COMMIT of its own (see OneStatementAppend).
   * Not with `inTransaction`, nor with caller-chosen event ids (their replay check reads first).
   */
  inOneStatement?: OneStatementAppend;
}

/** An event about to be appended, as it will be stored (data cut to size, parsed back); positions come with the insert. */
export type PendingEvent = Omit<StoredEvent, 'globalPosition' | 'transactionId' | 'createdAt'>;

/**
 * A statement that is the whole append: it calls `<schema>.append_events($1, $2, $3, $4)` (appendFunctionMigration:
 * stream id, stream type, expected version, the events as jsonb) and does in the same statement what the inline
 * projections would (they are not run for it), returning `append_events`' rows; its own parameters are `$5` on.
 * No row back is a concurrency conflict; an error it raises rolls the whole append back. `stateBefore` is
 * AppendOptions.stateBefore; null: append the ordinary way (e.g. the state needed is not at hand).
 */
export type OneStatementAppend = (pending: PendingEvent[], stateBefore: unknown) => { sql: string; params: unknown[] } | null;

export interface AppendResult {
  /** The stream's version after this append (the version of its last event). */
  nextVersion: number;
  events: StoredEvent[];
}

export interface StreamSnapshot {
  /** 0 when the stream does not exist. */
  version: number;
  events: StoredEvent[];
}

interface PreparedEvent {
  eventId: string;
  type: string;
  schemaVersion: number;
  streamVersion: number;
  dataJson: string;
  metadataJson: string;
}

/**
 * Streams with optimistic concurrency on PostgreSQL. Every append is one `dataSource.transaction`:
 * claim the next version (conditional write on `streams`), insert the events, run inline projections; or, when
 * the caller gives it as one statement (`AppendOptions.inOneStatement`), that statement alone, autocommitted.
 */
export class PostgresEventStore {
  private readonly tables: EventStoreTables;
  private readonly projections: InlineProjection[];
  private readonly upcast: UpcastFn;
  private readonly maxEventBytes: number;
  /** The data source's own pg pool, for one-statement appends (taken at the first). */
  private pool: pg.Pool | null = null;
  /** A prepared statement's name per one-statement append SQL text. */
  private readonly statementNames = new Map<string, string>();

  constructor(
    private readonly dataSource: DataSource,
    options: EventStoreOptions,
  ) {
    this.tables = eventStoreTables(options.schema);
    this.projections = options.projections ?? [];
    this.upcast = upcasterChain(options.upcasters ?? []);
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  }

  async readStream(streamId: string): Promise<StreamSnapshot> {
    // One statement, so the version and the events come from the same snapshot.
    const rows: (EventRow & { head: number })[] = await this.dataSource.query(
      `SELECT s.version AS head, ${EVENT_COLUMNS}
         FROM ${this.tables.streams} s
         JOIN ${this.tables.events} e ON e.stream_id = s.stream_id
        WHERE s.stream_id = $1
        ORDER BY e.stream_version`,
      [streamId],
    );
    if (rows.length === 0) return { version: 0, events: [] };
    return { version: rows[0].head, events: rows.map((row) => this.upcast(toStoredEvent(row))) };
  }

  /** The stream's version alone (0 when it does not exist): to append at its head without reading its events. */
  streamVersion(streamId: string): Promise<number> {
    return this.currentVersion(this.dataSource.manager, streamId);
  }

  async appendToStream(
    streamId: string,
    streamType: string,
    expectedVersion: number,
    events: NewEvent[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    if (!Number.isInteger(expectedVersion) || expectedVersion < 0) {
      throw new Error(`expectedVersion must be a non-negative integer, got ${expectedVersion}`);
    }
    if (events.length === 0) return { nextVersion: expectedVersion, events: [] };
    const prepared = events.map((event, index) => prepare(event, expectedVersion + index + 1, this.maxEventBytes));
    // Only a caller-chosen id can already exist; fresh UUIDs never do.
    const replayKey = events[0].eventId !== undefined ? prepared[0].eventId : null;
    const nextVersion = expectedVersion + events.length;
    if (replayKey === null && options.inOneStatement !== undefined) {
      if (options.inTransaction !== undefined) throw new Error('an append in one statement takes no inTransaction');
      const pending = prepared.map((event) => ({ ...parsedBack(event), streamId, streamType }));
      const statement = options.inOneStatement(pending, options.stateBefore);
      if (statement !== null) return this.appendInOneStatement(expectedVersion, prepared, pending, statement);
    }

    try {
      return await this.dataSource.transaction(async (manager) => {
        // A retry of an append that already committed: answer as the first time, write nothing.
        const replay = replayKey && (await this.findCommitted(manager, streamId, replayKey, prepared));
        if (replay) return replay;

        const stored = await this.claimAndInsert(manager, streamId, streamType, expectedVersion, prepared);
        if (stored === null) {
          // Read committed: this statement sees whatever the append we waited for committed.
          const raced = replayKey && (await this.findCommitted(manager, streamId, replayKey, prepared));
          if (raced) return raced;
          throw new ConcurrencyError(streamId, expectedVersion, await this.currentVersion(manager, streamId));
        }

        for (const projection of this.projections) await projection(manager, stored, { stateBefore: options.stateBefore });
        if (options.inTransaction) await options.inTransaction(manager, stored);
        return { nextVersion, events: stored };
      });
    } catch (error) {
      // Safety net for a duplicate that slipped past both checks (e.g. a concurrent retry): same outcome.
      if (replayKey && this.isEventIdConflict(error)) {
        const replay = await this.findCommitted(this.dataSource.manager, streamId, replayKey, prepared);
        if (replay) return replay;
      }
      throw error;
    }
  }

  /** The append as the caller's one statement (OneStatementAppend): autocommitted, so it commits or fails whole. */
  private async appendInOneStatement(
    expectedVersion: number,
    prepared: PreparedEvent[],
    pending: PendingEvent[],
    statement: { sql: string; params: unknown[] },
  ): Promise<AppendResult> {
    const { streamId, streamType } = pending[0];
    // The events' JSON is spliced in as it was made, not parsed and stringified again.
    const eventsJson = `[${prepared
      .map(
        (event) =>
          `{"stream_version":${event.streamVersion},"event_id":"${event.eventId}","type":${JSON.stringify(event.type)},` +
          `"schema_version":${event.schemaVersion},"data":${event.dataJson},"metadata":${event.metadataJson}}`,
      )
      .join(',')}]`;
    // A named statement on the data source's own pool, past TypeORM's per-query runner: each connection parses it
    // once, and a chat turn runs two of these on its client's path (the start, the ending).
    this.pool ??= poolOf(this.dataSource);
    const { rows } = await this.pool.query<AppendedRow>({
      name: this.statementName(statement.sql),
      text: statement.sql,
      values: [streamId, streamType, expectedVersion, eventsJson, ...statement.params],
    });
    if (rows.length === 0) throw new ConcurrencyError(streamId, expectedVersion, await this.currentVersion(this.dataSource.manager, streamId));
    return { nextVersion: expectedVersion + prepared.length, events: storedFrom(pending, rows) };
  }

  /** One name per SQL text (PostgreSQL keeps at most 63 bytes of a name). */
  private statementName(sql: string): string {
    let name = this.statementNames.get(sql);
    if (name === undefined) {
      name = `append_${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`;
      this.statementNames.set(sql, name);
    }
    return name;
  }

  private async currentVersion(manager: EntityManager, streamId: string): Promise<number> {
    const rows: { version: number }[] = await manager.query(
      `SELECT version FROM ${this.tables.streams} WHERE stream_id = $1`,
      [streamId],
    );
    return rows[0]?.version ?? 0;
  }

  /**
   * Claims the next version (a conditional write on `streams`) and inserts the events, in one statement: the
   * insert reads from the claim, so it inserts nothing when the claim wrote nothing. Null then: another writer
   * got there first (or the stream is not at `expectedVersion`).
   */
  private async claimAndInsert(
    manager: EntityManager,
    streamId: string,
    streamType: string,
    expectedVersion: number,
    prepared: PreparedEvent[],
  ): Promise<StoredEvent[] | null> {
    const nextVersion = expectedVersion + prepared.length;
    const params: unknown[] = [streamId, nextVersion];
    let claim: string;
    if (expectedVersion === 0) {
      params.push(streamType);
      claim = `INSERT INTO ${this.tables.streams} (stream_id, stream_type, version) VALUES ($1, $3, $2::int)
               ON CONFLICT (stream_id) DO NOTHING RETURNING 1`;
    } else {
      params.push(expectedVersion);
      claim = `UPDATE ${this.tables.streams} SET version = $2::int WHERE stream_id = $1 AND version = $3::int RETURNING 1`;
    }
    const values = prepared.map((event) => {
      params.push(event.streamVersion, event.eventId, event.type, event.schemaVersion, event.dataJson, event.metadataJson);
      const n = params.length;
      return `($${n - 5}::int, $${n - 4}::uuid, $${n - 3}::text, $${n - 2}::int, $${n - 1}::jsonb, $${n}::jsonb)`;
    });
    const rows: AppendedRow[] = await manager.query(
      `WITH claim AS (${claim})
         INSERT INTO ${this.tables.events}
           (stream_id, stream_version, event_id, type, schema_version, data, metadata)
         SELECT $1::text, v.stream_version, v.event_id, v.type, v.schema_version, v.data, v.metadata
           FROM claim, (VALUES ${values.join(', ')}) AS v (stream_version, event_id, type, schema_version, data, metadata)
         RETURNING global_position::text AS global_position, transaction_id::text AS transaction_id,
                   stream_version, created_at`,
      params,
    );
    if (rows.length === 0) return null;
    return storedFrom(
      prepared.map((event) => ({ ...parsedBack(event), streamId, streamType })),
      rows,
    );
  }

  /** The already committed events of this batch when its first event id is stored, else null. */
  private async findCommitted(
    manager: EntityManager,
    streamId: string,
    firstEventId: string,
    prepared: PreparedEvent[],
  ): Promise<AppendResult | null> {
    const rows: EventRow[] = await manager.query(
      `SELECT ${EVENT_COLUMNS}
         FROM ${this.tables.events} e JOIN ${this.tables.streams} s ON s.stream_id = e.stream_id
        WHERE e.event_id = ANY($1::uuid[])
        ORDER BY e.global_position`,
      [prepared.map((event) => event.eventId)],
    );
    const first = rows.find((row) => row.event_id === firstEventId);
    if (!first) return null;
    if (first.stream_id !== streamId) {
      throw new Error(`event id ${firstEventId} was already appended to stream "${first.stream_id}", not "${streamId}"`);
    }
    const events = rows.filter((row) => row.stream_id === streamId).map(toStoredEvent);
    return { nextVersion: events[events.length - 1].streamVersion, events };
  }

  private isEventIdConflict(error: unknown): boolean {
    return isUniqueViolation(error, EVENT_ID_CONSTRAINT) && `"${pgErrorFields(error).schema}"` === this.tables.schema;
  }
}

/** What an insert of events returns per event (the claim-and-insert statement, `append_events`). */
interface AppendedRow {
  global_position: string;
  transaction_id: string;
  stream_version: number;
  created_at: Date;
}

function storedFrom(pending: PendingEvent[], rows: AppendedRow[]): StoredEvent[] {
  const byVersion = new Map(rows.map((row) => [row.stream_version, row]));
  return pending.map((event) => {
    const row = byVersion.get(event.streamVersion);
    if (!row) throw new Error(`insert returned no row for ${event.streamId}@${event.streamVersion}`);
    return { ...event, globalPosition: row.global_position, transactionId: row.transaction_id, createdAt: row.created_at };
  });
}

/** The event as readers will see it: parsed back from the stored JSON. */
function parsedBack(event: PreparedEvent): Omit<PendingEvent, 'streamId' | 'streamType'> {
  return {
    streamVersion: event.streamVersion,
    eventId: event.eventId,
    type: event.type,
    schemaVersion: event.schemaVersion,
    data: JSON.parse(event.dataJson),
    metadata: JSON.parse(event.metadataJson),
  };
}

function prepare(event: NewEvent, streamVersion: number, maxEventBytes: number): PreparedEvent {
  const metadataJson = toStorableJson(event.metadata);
  return {
    eventId: event.eventId ?? randomUUID(),
    type: event.type,
    schemaVersion: event.schemaVersion ?? 1,
    streamVersion,
    // NUL-free and within MAX_EVENT_BYTES, so any text can be appended and every event can be relayed;
    // projections, deciders and callers see the stored (possibly cut) form, parsed back.
    dataJson: storableEventData(event.type, event.data, metadataJson, maxEventBytes),
    metadataJson,
  };
}
