import type { MigrationInterface, QueryRunner } from 'typeorm';
import { EVENT_ID_CONSTRAINT, eventStoreTables } from './event-store.sql';

export type EventStoreMigrationClass = new () => MigrationInterface;

/**
 * The event store's tables in one service schema. Services list the returned class among their own migrations.
 * TypeORM reads the timestamp from the last 13 digits of the name, hence `EventStore<timestamp>`.
 */
export function eventStoreMigration(schema: string, timestamp = 1700000000100): EventStoreMigrationClass {
  if (!/^\d{13}$/.test(String(timestamp))) throw new Error(`migration timestamp must have 13 digits, got ${timestamp}`);
  const t = eventStoreTables(schema);
  const migrationName = `EventStore${timestamp}`;

  const migration = class implements MigrationInterface {
    name = migrationName;

    async up(runner: QueryRunner): Promise<void> {
      await runner.query(`CREATE SCHEMA IF NOT EXISTS ${t.schema}`);
      await runner.query(`CREATE TABLE ${t.streams} (
        stream_id text PRIMARY KEY,
        stream_type text NOT NULL,
        version integer NOT NULL
      )`);
      await runner.query(`CREATE TABLE ${t.events} (
        global_position bigserial PRIMARY KEY,
        stream_id text NOT NULL REFERENCES ${t.streams} (stream_id),
        stream_version integer NOT NULL,
        event_id uuid NOT NULL,
        type text NOT NULL,
        schema_version integer NOT NULL DEFAULT 1,
        data jsonb NOT NULL,
        metadata jsonb NOT NULL,
        transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT ${EVENT_ID_CONSTRAINT} UNIQUE (event_id),
        CONSTRAINT events_stream_id_stream_version_key UNIQUE (stream_id, stream_version)
      )`);
      // Tails read in (transaction_id, global_position) order; see event-tail.ts.
      await runner.query(
        `CREATE INDEX events_transaction_id_global_position_idx ON ${t.events} (transaction_id, global_position)`,
      );
      await runner.query(`CREATE TABLE ${t.checkpoints} (
        name text PRIMARY KEY,
        position bigint NOT NULL,
        transaction_id xid8 NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${t.checkpoints}`);
      await runner.query(`DROP TABLE ${t.events}`);
      await runner.query(`DROP TABLE ${t.streams}`);
    }
  };
  // TypeORM falls back to the constructor name in some messages; keep it equal to the migration name.
  Object.defineProperty(migration, 'name', { value: migrationName });
  return migration;
}

/**
 * `<schema>.parked_messages`: what an outbox relay could not publish because of the message itself (NATS refused
 * it, or its translation failed), recorded so the relay goes on. The message is not kept (it may be what was too
 * large): the source event is, and the relay can be asked again for what it stands for. Listed after the
 * schema's `eventStoreMigration`.
 */
export function outboxParkingMigration(schema: string, timestamp: number): EventStoreMigrationClass {
  if (!/^\d{13}$/.test(String(timestamp))) throw new Error(`migration timestamp must have 13 digits, got ${timestamp}`);
  const t = eventStoreTables(schema);
  const migrationName = `OutboxParking${timestamp}`;

  const migration = class implements MigrationInterface {
    name = migrationName;

    async up(runner: QueryRunner): Promise<void> {
      await runner.query(`CREATE TABLE ${t.parkedMessages} (
        id bigserial PRIMARY KEY,
        checkpoint_name text NOT NULL,
        event_id uuid NOT NULL,
        global_position bigint NOT NULL,
        stream_id text NOT NULL,
        event_type text NOT NULL,
        subject text,
        msg_id text,
        payload_bytes integer,
        reason text NOT NULL,
        parked_at timestamptz NOT NULL DEFAULT now()
      )`);
      // A batch republished after a crash parks the same message again: one row each.
      await runner.query(
        `CREATE UNIQUE INDEX parked_messages_message_key ON ${t.parkedMessages} (checkpoint_name, event_id, (coalesce(msg_id, '')))`,
      );
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${t.parkedMessages}`);
    }
  };
  Object.defineProperty(migration, 'name', { value: migrationName });
  return migration;
}

/**
 * `<schema>.append_events(stream_id, stream_type, expected_version, events jsonb)`: the append's claim and insert
 * as a function, for a schema whose appends run as one statement (`AppendOptions.inOneStatement`): a function of
 * the service calls it and writes its read model in the same statement. The claim is the conditional write on
 * `streams` `claimAndInsert` makes; no row back means another writer got there first. `events`: an array of
 * `{stream_version, event_id, type, schema_version, data, metadata}`. Listed after the schema's `eventStoreMigration`.
 */
export function appendFunctionMigration(schema: string, timestamp: number): EventStoreMigrationClass {
  if (!/^\d{13}$/.test(String(timestamp))) throw new Error(`migration timestamp must have 13 digits, got ${timestamp}`);
  const t = eventStoreTables(schema);
  const migrationName = `AppendFunction${timestamp}`;

  const migration = class implements MigrationInterface {
    name = migrationName;

    async up(runner: QueryRunner): Promise<void> {
      await runner.query(`
        CREATE FUNCTION ${t.schema}.append_events(p_stream_id text, p_stream_type text, p_expected integer, p_events jsonb)
        RETURNS TABLE (global_position text, transaction_id text, stream_version integer, created_at timestamptz)
        LANGUAGE plpgsql AS $$
        #variable_conflict use_column
        DECLARE
          next_version integer := p_expected + jsonb_array_length(p_events);
        BEGIN
          IF p_expected = 0 THEN
            INSERT INTO ${t.streams} (stream_id, stream_type, version) VALUES (p_stream_id, p_stream_type, next_version)
              ON CONFLICT (stream_id) DO NOTHING;
          ELSE
            UPDATE ${t.streams} SET version = next_version WHERE stream_id = p_stream_id AND version = p_expected;
          END IF;
          IF NOT FOUND THEN
            RETURN;
          END IF;
          RETURN QUERY
            INSERT INTO ${t.events} (stream_id, stream_version, event_id, type, schema_version, data, metadata)
            SELECT p_stream_id, (e->>'stream_version')::integer, (e->>'event_id')::uuid, e->>'type',
                   (e->>'schema_version')::integer, e->'data', e->'metadata'
              FROM jsonb_array_elements(p_events) AS e
            RETURNING global_position::text, transaction_id::text, stream_version, created_at;
        END
        $$`);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP FUNCTION ${t.schema}.append_events(text, text, integer, jsonb)`);
    }
  };
  Object.defineProperty(migration, 'name', { value: migrationName });
  return migration;
}
