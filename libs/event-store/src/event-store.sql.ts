import type { EventMetadata, StoredEvent } from './event.types';

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Schema-qualified table names; the schema is validated because it is interpolated into SQL. */
export function eventStoreTables(schema: string) {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name "${schema}"`);
  const q = `"${schema}"`;
  return {
    schema: q,
    streams: `${q}.streams`,
    events: `${q}.events`,
    checkpoints: `${q}.checkpoints`,
    parkedMessages: `${q}.parked_messages`,
  };
}

export type EventStoreTables = ReturnType<typeof eventStoreTables>;

/** Constraint names fixed by the migration, so errors can be recognised by name. */
export const EVENT_ID_CONSTRAINT = 'events_event_id_key';

/** Column list for reading full events; expects `events e JOIN streams s`. */
export const EVENT_COLUMNS = `e.global_position::text AS global_position, e.transaction_id::text AS transaction_id,
  e.stream_id, s.stream_type, e.stream_version, e.event_id::text AS event_id, e.type, e.schema_version,
  e.data, e.metadata, e.created_at`;

export interface EventRow {
  global_position: string;
  transaction_id: string;
  stream_id: string;
  stream_type: string;
  stream_version: number;
  event_id: string;
  type: string;
  schema_version: number;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  created_at: Date;
}

export function toStoredEvent(row: EventRow): StoredEvent {
  return {
    globalPosition: row.global_position,
    transactionId: row.transaction_id,
    streamId: row.stream_id,
    streamType: row.stream_type,
    streamVersion: row.stream_version,
    eventId: row.event_id,
    type: row.type,
    schemaVersion: row.schema_version,
    data: row.data,
    metadata: row.metadata,
    createdAt: row.created_at,
  };
}
