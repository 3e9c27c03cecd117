import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Counter } from 'prom-client';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { metricsRegistry } from '@interns/metrics';
import { createTestDatabase, type NatsServerProcess, startNatsServer, type TestDatabase } from '@interns/testing';
import type { StoredEvent } from './event.types';
import { eventStoreMigration, outboxParkingMigration } from './event-store.migration';
import { type OutboxMessage, OutboxRelay, type OutboxRelayOptions } from './outbox-relay';
import { PostgresEventStore } from './postgres-event-store';

const SCHEMA = 'relay_parking';
const MAX_PAYLOAD = 8192;

async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 8_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * One message per event of the test's stream carrying its whole data, as a careless translator would. Every test
 * appends to the one schema, so each relay publishes its own test's events only (on subjects of their own).
 */
const wholeEventOf = (test: string) => async (event: StoredEvent): Promise<OutboxMessage[]> => {
  if (event.data.test !== test) return [];
  return [{ subject: `parking.${test}.${event.type}`, msgId: event.eventId, payload: JSON.stringify({ id: event.eventId, data: event.data }) }];
};

describe('OutboxRelay parking (a nats-server with max_payload 8 KiB)', () => {
  const warnings: string[] = [];
  const logger = { log: () => undefined, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  const relays: OutboxRelay[] = [];
  let server: NatsServerProcess;
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let store: PostgresEventStore;

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true, maxPayload: MAX_PAYLOAD });
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: SCHEMA,
      migrations: [eventStoreMigration(SCHEMA, 1700000000100), outboxParkingMigration(SCHEMA, 1700000000900)],
      applicationName: 'outbox-relay.parking.int.spec',
      migrate: true,
    });
    nc = await connect({ servers: server.url, name: 'outbox-relay.parking.int.spec' });
    jsm = await jetstreamManager(nc);
    store = new PostgresEventStore(dataSource, { schema: SCHEMA });
  });

  afterEach(async () => {
    await Promise.all(relays.splice(0).map((relay) => relay.stop()));
  });

  afterAll(async () => {
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
    await server?.remove();
  });

  function relay(streamName: string, options: Partial<OutboxRelayOptions> = {}) {
    const created = new OutboxRelay({
      dataSource,
      nats: nc,
      schema: SCHEMA,
      streamName,
      streamSubjects: [`parking.${streamName}.>`],
      messagesFor: wholeEventOf(streamName),
      checkpointName: streamName,
      pollIntervalMs: 10,
      batchSize: 10,
      logger,
      metricsLabel: streamName,
      ...options,
    });
    relays.push(created);
    return created;
  }

  async function append(test: string, ...data: Record<string, unknown>[]): Promise<StoredEvent[]> {
    const { events } = await store.appendToStream(
      `${test}-${randomUUID()}`,
      'session',
      0,
      data.map((item) => ({
        type: 'happened',
        data: { test, ...item },
        metadata: { correlation_id: randomUUID(), causation_id: null, actor: 'spec' },
      })),
    );
    return events;
  }

  async function streamed(streamName: string): Promise<string[]> {
    const { state } = await jsm.streams.info(streamName);
    if (state.messages === 0) return [];
    const consumer = await jetstream(nc).consumers.get(streamName);
    const ids: string[] = [];
    for await (const message of await consumer.fetch({ max_messages: state.messages, expires: 2_000 })) {
      ids.push(message.json<{ id: string }>().id);
    }
    return ids;
  }

  async function parkedCount(streamName: string, reason: string): Promise<number> {
    const metric = metricsRegistry.getSingleMetric('interns_outbox_parked_total') as Counter | undefined;
    const { values } = (await metric?.get()) ?? { values: [] };
    return values.find((value) => value.labels.relay === streamName && value.labels.reason === reason)?.value ?? 0;
  }

  async function parkedRows(checkpoint: string) {
    return dataSource.query(
      `SELECT event_id, event_type, msg_id, payload_bytes, reason FROM ${SCHEMA}.parked_messages WHERE checkpoint_name = $1`,
      [checkpoint],
    ) as Promise<{ event_id: string; event_type: string; msg_id: string | null; payload_bytes: number | null; reason: string }[]>;
  }

  it('parks a message over the max payload, counts and logs it, and publishes the events after it', async () => {
    const streamName = 'PARKING_TOO_LARGE';
    const events = await append(streamName, { n: 1 }, { n: 2, output: 'x'.repeat(20_000) }, { n: 3 });
    const relayed = relay(streamName);
    await relayed.start();
    await eventually(async () => (await relayed.lag()) === 0, 'the relay to pass the large event');
    const later = await append(streamName, { n: 4 });
    await eventually(async () => (await streamed(streamName)).length === 3, 'the event after to flow');

    expect(await streamed(streamName)).toEqual([events[0].eventId, events[2].eventId, later[0].eventId]);
    const [row, ...others] = await parkedRows(streamName);
    expect(others).toEqual([]);
    expect(row).toMatchObject({ event_id: events[1].eventId, event_type: 'happened', msg_id: events[1].eventId });
    expect(row.payload_bytes).toBeGreaterThan(MAX_PAYLOAD);
    expect(row.reason).toMatch(/^refused: .*max_payload/);
    expect(await parkedCount(streamName, 'refused')).toBe(1);
    expect(warnings.some((line) => line.includes(`parked message ${events[1].eventId}`))).toBe(true);
  });

  it('parks an event its translator cannot make sense of while the database answers', async () => {
    const streamName = 'PARKING_UNTRANSLATABLE';
    const events = await append(streamName, { n: 1 }, { n: 2, broken: true }, { n: 3 });
    const relayed = relay(streamName, {
      messagesFor: async (event) => {
        if (event.data.test === streamName && event.data.broken) throw new TypeError('cannot read properties of undefined');
        return wholeEventOf(streamName)(event);
      },
    });
    await relayed.start();
    await eventually(async () => (await relayed.lag()) === 0, 'the relay to pass the broken event');

    await eventually(async () => (await streamed(streamName)).length === 2, 'the other events');
    expect(await streamed(streamName)).toEqual([events[0].eventId, events[2].eventId]);
    expect(await parkedRows(streamName)).toEqual([
      { event_id: events[1].eventId, event_type: 'happened', msg_id: null, payload_bytes: null, reason: 'untranslatable: cannot read properties of undefined' },
    ]);
    expect(await parkedCount(streamName, 'untranslatable')).toBe(1);
  });

  it('retries, and parks nothing, when the failure is the database\'s or the broker\'s (transient)', async () => {
    const streamName = 'PARKING_TRANSIENT';
    const events = await append(streamName, { n: 1 }, { n: 2 });
    let failures = 3;
    const relayed = relay(streamName, {
      messagesFor: async (event) => {
        if (event.data.test === streamName && event.data.n === 2 && failures-- > 0) throw Object.assign(new Error('Connection terminated'), { code: 'ECONNRESET' });
        return wholeEventOf(streamName)(event);
      },
    });
    await relayed.start();
    await eventually(async () => (await relayed.lag()) === 0, 'the relay to get past the failures', 15_000);

    expect(failures).toBeLessThan(0);
    await eventually(async () => (await streamed(streamName)).length === 2, 'both events');
    expect(await streamed(streamName)).toEqual(events.map((event) => event.eventId));
    expect(await parkedRows(streamName)).toEqual([]);
  });

  it('creates its stream with the configured limits, and brings an existing stream to them', async () => {
    const limits = { maxAgeMs: 3_600_000, maxBytes: 64 * 1024 * 1024, replicas: 1 };
    await jsm.streams.add({ name: 'PARKING_LIMITS_OLD', subjects: ['parking.PARKING_LIMITS_OLD.>'] });
    const fresh = relay('PARKING_LIMITS_NEW', { streamLimits: limits });
    const existing = relay('PARKING_LIMITS_OLD', { streamLimits: limits });
    await fresh.start();
    await existing.start();

    for (const name of ['PARKING_LIMITS_NEW', 'PARKING_LIMITS_OLD']) {
      const { config } = await jsm.streams.info(name);
      expect({ name, max_age: config.max_age, max_bytes: config.max_bytes, num_replicas: config.num_replicas }).toEqual({
        name,
        max_age: 3_600_000 * 1_000_000,
        max_bytes: 64 * 1024 * 1024,
        num_replicas: 1,
      });
    }
  });
});
