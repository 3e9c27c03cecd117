import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamManager, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import {
  eventStoreMigration,
  type EventMetadata,
  INTEGRATION_EVENTS_CHECKPOINT,
  IntegrationEventsRelay,
  OutboxRelay,
  PostgresEventStore,
} from '@interns/event-store';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const METADATA: EventMetadata = { correlation_id: 'c-1', causation_id: null, actor: 'member:alice' };

async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 8_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Every message of a stream, oldest first, read without a durable consumer. */
async function streamMessages(nc: NatsConnection, stream: string, count: number): Promise<JsMsg[]> {
  const consumer = await jetstream(nc).consumers.get(stream);
  const received: JsMsg[] = [];
  const batch = await consumer.fetch({ max_messages: count, expires: 2_000 });
  for await (const message of batch) received.push(message);
  return received;
}

describe('runs integration events relay', () => {
  const prefix = testNatsPrefix();
  const subjects = subjectsFor(prefix);
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    Logger.overrideLogger(false);
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: 'runs',
      // Lifecycle's event store beside it: both relays run against one database in this test.
      migrations: [...RUNS_MIGRATIONS, eventStoreMigration('lifecycle', 1700000000100)],
      applicationName: 'integration-events.relay.int.spec',
      migrate: true,
    });
    nc = await connect({ servers: NATS_URL, name: 'integration-events.relay.int.spec' });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    for (const service of ['runs', 'lifecycle'] as const) {
      await jsm?.streams.delete(subjects.eventStreamName(service)).catch(() => undefined);
    }
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  it("publishes committed session events on their subjects with the event id as Nats-Msg-Id, beside lifecycle's relay", async () => {
    const runsRelay = new IntegrationEventsRelay({
      service: 'runs',
      schema: 'runs',
      dataSource,
      nats: nc,
      subjects,
      logger: new Logger('IntegrationEventsRelay'),
    });
    // Configured as lifecycle's own relay is: same checkpoint name, its own schema.
    const lifecycleRelay = new OutboxRelay({
      dataSource,
      schema: 'lifecycle',
      nats: nc,
      streamName: subjects.eventStreamName('lifecycle'),
      streamSubjects: [subjects.eventsOf('lifecycle')],
      subjectFor: (event) => subjects.event('lifecycle', event.type),
      checkpointName: INTEGRATION_EVENTS_CHECKPOINT,
      pollIntervalMs: 10,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });

    const sessionId = randomUUID();
    const runId = randomUUID();
    const at = new Date().toISOString();
    await new PostgresEventStore(dataSource, { schema: 'runs' }).appendToStream(`session-${sessionId}`, 'session', 0, [
      { type: 'SessionOpened', data: { sessionId, internId: randomUUID(), callerId: 'member:alice', origin: 'chat', at }, metadata: METADATA },
      { type: 'RunStarted', data: { runId, prompt: 'hi', approvalMode: 'manual', model: 'local/scripted', ownerId: 'o', at }, metadata: METADATA },
      { type: 'UsageRecorded', data: { runId, promptTokens: 1, completionTokens: 2 }, metadata: METADATA },
    ]);
    await new PostgresEventStore(dataSource, { schema: 'lifecycle' }).appendToStream(`intern-${randomUUID()}`, 'intern', 0, [
      { type: 'InternSuspended', data: { at }, metadata: METADATA },
    ]);
    const stored: { event_id: string; type: string }[] = await dataSource.query(
      'SELECT event_id::text, type FROM runs.events ORDER BY global_position',
    );

    await runsRelay.onApplicationBootstrap();
    await lifecycleRelay.start();
    try {
      await eventually(async () => (await runsRelay.lag()) === 0 && (await lifecycleRelay.lag()) === 0, 'both relays to catch up');
      const messages = await streamMessages(nc, subjects.eventStreamName('runs'), stored.length);
      expect(messages.map((message) => message.subject)).toEqual([
        `${prefix}.evt.runs.session-opened`,
        `${prefix}.evt.runs.run-started`,
        `${prefix}.evt.runs.usage-recorded`,
      ]);
      expect(messages.map((message) => message.headers?.get('Nats-Msg-Id'))).toEqual(stored.map((row) => row.event_id));
      expect(messages[2].json()).toMatchObject({
        event_id: stored[2].event_id,
        type: 'UsageRecorded',
        stream_id: `session-${sessionId}`,
        data: { runId, promptTokens: 1, completionTokens: 2 },
      });
      expect((await jsm.streams.info(subjects.eventStreamName('lifecycle'))).state.messages).toBe(1);
    } finally {
      await runsRelay.onApplicationShutdown();
      await lifecycleRelay.stop();
    }
  });
});
