import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Counter, Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { type ServiceName, subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { metricsRegistry } from '@interns/metrics';
import { createTestDatabase, type TestDatabase, TEST_STREAM_LIMITS, testNatsPrefix } from '@interns/testing';
import type { StoredEvent } from './event.types';
import { eventStoreMigration } from './event-store.migration';
import { checkpointOf, EventTail } from './event-tail';
import { type OutboxMessage, OutboxRelay, type OutboxRelayOptions } from './outbox-relay';
import { PostgresEventStore } from './postgres-event-store';
import { WorkSignal } from '@interns/workers';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const GRACEFUL = 'relay_graceful';
const KILLED = 'relay_killed';
const LAGGING = 'relay_lagging';
const WOKEN = 'relay_woken';

async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 8_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** What these tests publish for an event (what a message holds is up to `messagesFor`). */
const relayed = (event: StoredEvent) => ({ event_id: event.eventId, type: event.type, data: event.data });
type RelayedEventMessage = ReturnType<typeof relayed>;

describe('OutboxRelay', () => {
  const subjects = subjectsFor(testNatsPrefix());
  const subjectOf = (service: ServiceName, type: string) => `${subjects.prefix}.evt.${service}.${type}`;

  /** One message per event, on `<prefix>.evt.<service>.<type>`, with the event id as msgID. */
  const publishedAs = (service: ServiceName) => async (event: StoredEvent): Promise<OutboxMessage[]> => [
    { subject: subjectOf(service, event.type), msgId: event.eventId, payload: JSON.stringify(relayed(event)) },
  ];
  const createdStreams = new Set<string>();
  const warnings: string[] = [];
  const logger = { log: () => undefined, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  const relays: OutboxRelay[] = [];
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: GRACEFUL,
      migrations: [
        eventStoreMigration(GRACEFUL, 1700000000100),
        eventStoreMigration(KILLED, 1700000000101),
        eventStoreMigration(LAGGING, 1700000000102),
        eventStoreMigration(WOKEN, 1700000000103),
      ],
      applicationName: 'outbox-relay.int.spec',
      migrate: true,
    });
    nc = await connect({ servers: NATS_URL, name: 'outbox-relay.int.spec' });
    jsm = await jetstreamManager(nc);
  });

  afterEach(async () => {
    await Promise.all(relays.splice(0).map((relay) => relay.stop()));
  });

  afterAll(async () => {
    for (const name of createdStreams) await jsm?.streams.delete(name).catch(() => undefined);
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  function relay(options: Partial<OutboxRelayOptions> & Pick<OutboxRelayOptions, 'schema' | 'streamName'>) {
    createdStreams.add(options.streamName);
    const created = new OutboxRelay({
      dataSource,
      nats: nc,
      streamSubjects: [subjects.eventsOf('lifecycle')],
      messagesFor: publishedAs('lifecycle'),
      checkpointName: 'jetstream',
      pollIntervalMs: 10,
      batchSize: 4,
      logger,
      streamLimits: TEST_STREAM_LIMITS,
      ...options,
    });
    relays.push(created);
    return created;
  }

  /** Appends `count` events, one transaction each, spread over a few streams; returns them in commit order. */
  function appender(schema: string) {
    const store = new PostgresEventStore(dataSource, { schema });
    const versions = new Map<string, number>();
    const streams = Array.from({ length: 3 }, () => `intern-${randomUUID()}`);
    const all: StoredEvent[] = [];
    return {
      all,
      async append(count: number) {
        for (let i = 0; i < count; i++) {
          const streamId = streams[all.length % streams.length];
          const version = versions.get(streamId) ?? 0;
          const { events } = await store.appendToStream(streamId, 'intern', version, [
            {
              type: 'intern-renamed',
              data: { n: all.length },
              metadata: { correlation_id: randomUUID(), causation_id: null, actor: 'spec' },
            },
          ]);
          versions.set(streamId, version + 1);
          all.push(...events);
        }
      },
    };
  }

  /** Everything in the JetStream stream, read with an ordered consumer. */
  async function readBack(streamName: string) {
    const { state } = await jsm.streams.info(streamName);
    const consumer = await jetstream(nc).consumers.get(streamName);
    const messages = await consumer.fetch({ max_messages: state.messages, expires: 2_000 });
    const read: { body: RelayedEventMessage; msgId: string | undefined; subject: string }[] = [];
    for await (const message of messages) {
      read.push({ body: message.json<RelayedEventMessage>(), msgId: message.headers?.get('Nats-Msg-Id'), subject: message.subject });
    }
    return { stored: state.messages, read };
  }

  function expectExactlyOnceInOrder(read: { body: RelayedEventMessage; msgId?: string }[], appended: StoredEvent[]) {
    expect(read.map((m) => m.body.event_id)).toEqual(appended.map((e) => e.eventId));
    expect(read.map((m) => m.msgId)).toEqual(appended.map((e) => e.eventId));
  }

  it('publishes every event exactly once across a failed batch, a graceful stop midway and a new instance', async () => {
    const streamName = subjects.eventStreamName('lifecycle');
    const events = appender(GRACEFUL);
    const tail = new EventTail(dataSource, GRACEFUL);
    await events.append(20);

    let subjectCalls = 0;
    let lastRelayed = -1;
    let stopping: Promise<void> | undefined;
    const first: OutboxRelay = relay({
      schema: GRACEFUL,
      streamName,
      messagesFor: async (event) => {
        subjectCalls += 1;
        // Batch 2 fails (transiently: an error with a code, as a socket's) after publishing two of its events:
        // the retry republishes them (deduped by msgID).
        if (subjectCalls === 7) throw Object.assign(new Error('simulated publish failure'), { code: 'ECONNRESET' });
        // Stop requested in the middle of a batch (the one holding event 10): that batch still completes.
        if (event.eventId === events.all[9].eventId) stopping = first.stop();
        lastRelayed = Math.max(lastRelayed, events.all.findIndex((appended) => appended.eventId === event.eventId));
        return publishedAs('lifecycle')(event);
      },
    });
    await first.start();
    await eventually(() => stopping !== undefined, 'the first relay to reach event 10');
    await stopping;

    expect(first.isLeader).toBe(false);
    expect(warnings.some((w) => w.includes('simulated publish failure'))).toBe(true);
    // Where that batch ends depends on how many commits the tail could see when it read it (usually events
    // 9..12; an open transaction anywhere in the cluster holds the visibility horizon back and makes it shorter).
    // ... but it is the last: a batch of 4 holding event 10 ends by event 13.
    expect(lastRelayed).toBeGreaterThanOrEqual(9);
    expect(lastRelayed).toBeLessThanOrEqual(12);
    expect(await tail.loadCheckpoint('jetstream')).toEqual(checkpointOf(events.all[lastRelayed]));
    expect(await first.lag()).toBe(20 - (lastRelayed + 1));
    expect((await jsm.streams.info(streamName)).state.messages).toBe(lastRelayed + 1);

    await events.append(5);
    const second = relay({ schema: GRACEFUL, streamName });
    await second.start();
    await eventually(async () => (await second.lag()) === 0, 'the second relay to catch up');
    await second.stop();

    const { stored, read } = await readBack(streamName);
    expect(stored).toBe(25);
    expectExactlyOnceInOrder(read, events.all);
    const last = events.all[24];
    expect(read[24]).toEqual({
      subject: subjectOf('lifecycle', 'intern-renamed'),
      msgId: last.eventId,
      body: { event_id: last.eventId, type: 'intern-renamed', data: last.data },
    });
    expect(await tail.loadCheckpoint('jetstream')).toEqual(checkpointOf(last));
  });

  it('recovers from a relay killed mid-batch; of two replicas only one publishes, the other takes over', async () => {
    const streamName = `${subjects.eventStreamName('runs')}_killed`;
    const streamSubjects = [subjects.eventsOf('runs')];
    const messagesFor = publishedAs('runs');
    const events = appender(KILLED);
    const tail = new EventTail(dataSource, KILLED);
    await events.append(10);

    // The killed instance loses its broker connection after publishing part of its second batch.
    const doomed = await connect({ servers: NATS_URL, name: 'outbox-relay.int.spec doomed' });
    const killed = relay({
      schema: KILLED,
      streamName,
      streamSubjects,
      nats: doomed,
      messagesFor: async (event) => {
        if (event.eventId === events.all[6].eventId) void doomed.close();
        return messagesFor(event);
      },
    });
    await killed.start();
    await eventually(() => doomed.isClosed(), 'the doomed connection to close');
    await eventually(async () => (await jsm.streams.info(streamName)).state.messages >= 6, 'the partial batch');
    await sleep(50); // it keeps failing and backing off, without dying
    await killed.stop();
    expect(await tail.loadCheckpoint('jetstream')).toEqual(checkpointOf(events.all[3]));
    const publishedBeforeKill = (await jsm.streams.info(streamName)).state.messages;
    expect(publishedBeforeKill).toBeGreaterThan(4); // some events went out without a checkpoint

    const [a, b] = [
      relay({ schema: KILLED, streamName, streamSubjects, messagesFor }),
      relay({ schema: KILLED, streamName, streamSubjects, messagesFor }),
    ];
    await Promise.all([a.start(), b.start()]);
    await events.append(6);
    await eventually(async () => (await a.lag()) === 0, 'the replicas to catch up');
    expect([a.isLeader, b.isLeader].filter(Boolean)).toHaveLength(1);

    const [leader, standby] = a.isLeader ? [a, b] : [b, a];
    await leader.stop();
    await events.append(3);
    await eventually(async () => (await standby.lag()) === 0, 'the standby to take over');
    expect(standby.isLeader).toBe(true);
    await standby.stop();

    const { stored, read } = await readBack(streamName);
    expect(stored).toBe(19);
    expectExactlyOnceInOrder(read, events.all);
    expect(await tail.loadCheckpoint('jetstream')).toEqual(checkpointOf(events.all[18]));
  });

  it('start() is idempotent when replicas create the stream at the same moment', async () => {
    const streamName = `${subjects.eventStreamName('analytics')}_race`;
    const replicas = Array.from({ length: 3 }, () =>
      relay({
        schema: KILLED,
        streamName,
        streamSubjects: [subjects.eventsOf('analytics')],
        messagesFor: publishedAs('analytics'),
        checkpointName: 'race',
      }),
    );
    await Promise.all(replicas.map((replica) => replica.start()));
    const info = await jsm.streams.info(streamName);
    expect(info.config.subjects).toEqual([subjects.eventsOf('analytics')]);
  });

  /** A sample of the process registry, as a scrape would read it (the lag gauge measures on collect). */
  async function scraped(name: string, relayLabel: string): Promise<number | undefined> {
    const metric = metricsRegistry.getSingleMetric(name) as Gauge | Counter | undefined;
    const { values } = (await metric?.get()) ?? { values: [] };
    return values.find((value) => value.labels.relay === relayLabel)?.value;
  }

  it('shows its lag at scrape: growing while it cannot publish, 0 once caught up; counts what it published', async () => {
    // Subjects of their own: the other tests' streams stay until the end and JetStream refuses overlaps.
    const streamName = `${subjects.eventStreamName('gateway')}_lagging`;
    const own = { streamName, streamSubjects: [subjects.eventsOf('gateway')], metricsLabel: 'lagging' };
    const events = appender(LAGGING);
    await events.append(3);
    const stalled = relay({
      schema: LAGGING,
      ...own,
      messagesFor: async () => {
        throw new Error('simulated broker outage');
      },
    });
    await stalled.start();
    await sleep(300);
    const early = await scraped('interns_outbox_relay_lag_seconds', 'lagging');
    await sleep(300);
    const later = await scraped('interns_outbox_relay_lag_seconds', 'lagging');
    expect(early).toBeGreaterThanOrEqual(0.25);
    expect(later).toBeGreaterThan(early as number);
    expect(await scraped('interns_outbox_events_published_total', 'lagging')).toBeUndefined();
    await stalled.stop();
    // A stopped relay is not measured any more.
    expect(await scraped('interns_outbox_relay_lag_seconds', 'lagging')).toBeUndefined();

    const healthy = relay({ schema: LAGGING, ...own, messagesFor: publishedAs('gateway') });
    await healthy.start();
    await eventually(async () => (await scraped('interns_outbox_relay_lag_seconds', 'lagging')) === 0, 'the lag to fall to 0');
    expect(await scraped('interns_outbox_events_published_total', 'lagging')).toBe(3);
    expect(await healthy.lagSeconds()).toBe(0);
  });

  it("publishes a commit at once when its own process wakes it (the command handler's onAppended), long before the next poll", async () => {
    const streamName = `${subjects.eventStreamName('webhooks')}_woken`;
    const signal = new WorkSignal();
    const events = appender(WOKEN);
    const woken = relay({ schema: WOKEN, streamName, streamSubjects: [subjects.eventsOf('webhooks')], messagesFor: publishedAs('webhooks'), pollIntervalMs: 600_000, signal });
    await woken.start();
    await eventually(() => woken.isLeader, 'the relay to lead');
    const published = async () => (await jsm.streams.info(streamName)).state.messages;
    await events.append(1);
    await sleep(300);
    // Not woken: the commit waits for the next poll, ten minutes away.
    expect(await published()).toBe(0);
    signal.notify();
    await eventually(async () => (await published()) === 1, 'the woken relay to publish', 5_000);
    await events.append(2);
    signal.notify();
    await eventually(async () => (await published()) === 3, 'the woken relay to publish again', 5_000);
  });
});
