import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamManager, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { type IntegrationEvent, subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import {
  eventStoreMigration,
  type EventMetadata,
  INTEGRATION_EVENTS_CHECKPOINT,
  integrationEventId,
  IntegrationEventsRelay,
  OutboxRelay,
  PostgresEventStore,
} from '@interns/event-store';
import { createTestDatabase, type TestDatabase, TEST_STREAM_LIMITS, testNatsPrefix } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { sessionEventsTranslator } from './session-integration-events';

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

  it("publishes the integration events of committed session events, with ids derived from theirs, beside lifecycle's relay", async () => {
    const runsRelay = new IntegrationEventsRelay({
      service: 'runs',
      schema: 'runs',
      dataSource,
      nats: nc,
      subjects,
      translator: sessionEventsTranslator('runs'),
      logger: new Logger('IntegrationEventsRelay'),
      streamLimits: TEST_STREAM_LIMITS,
    });
    // Another relay on lifecycle's schema with the same checkpoint name: its own checkpoint and lease.
    const lifecycleRelay = new OutboxRelay({
      dataSource,
      schema: 'lifecycle',
      nats: nc,
      streamName: subjects.eventStreamName('lifecycle'),
      streamSubjects: [subjects.eventsOf('lifecycle')],
      messagesFor: async (event) => [{ subject: subjects.integrationEvent('intern.deleted'), msgId: event.eventId, payload: '{}' }],
      checkpointName: INTEGRATION_EVENTS_CHECKPOINT,
      pollIntervalMs: 10,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      streamLimits: TEST_STREAM_LIMITS,
    });

    const sessionId = randomUUID();
    const internId = randomUUID();
    const [first, second] = [randomUUID(), randomUUID()];
    const at = '2030-01-01T10:00:00.000Z';
    const question = { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'reject_once'] };
    const store = new PostgresEventStore(dataSource, { schema: 'runs' });
    const session = `session-${sessionId}`;
    await store.appendToStream(session, 'session', 0, [
      { type: 'SessionOpened', data: { sessionId, internId, callerId: 'key:org-key-1', origin: 'invoke', at }, metadata: METADATA },
      { type: 'RunStarted', data: { runId: first, prompt: 'hi', approvalMode: 'manual', model: 'local/scripted', ownerId: 'o', at }, metadata: METADATA },
      { type: 'UsageRecorded', data: { runId: first, promptTokens: 1, completionTokens: 2 }, metadata: METADATA },
      { type: 'QuestionAsked', data: { runId: first, toolCallId: 'call-1', question, expiresAt: '2030-01-01T10:05:00.000Z' }, metadata: METADATA },
    ]);
    await store.appendToStream(session, 'session', 4, [
      { type: 'QuestionExpired', data: { runId: first, toolCallId: 'call-1' }, metadata: METADATA },
      { type: 'RunCancelled', data: { runId: first, reason: 'interaction_deadline', at: '2030-01-01T10:05:00.000Z' }, metadata: METADATA },
      { type: 'RunStarted', data: { runId: second, prompt: 'again', approvalMode: 'self-drive', model: 'local/scripted', ownerId: 'o', at }, metadata: METADATA },
      { type: 'PromptJoined', data: { runId: second, text: 'and this', at }, metadata: METADATA },
      {
        type: 'RunFinished',
        data: { runId: second, finishReason: 'error', error: { reason: 'model_error', message: 'boom' }, usage: null, at: '2030-01-01T10:06:00.000Z' },
        metadata: METADATA,
      },
    ]);
    await new PostgresEventStore(dataSource, { schema: 'lifecycle' }).appendToStream(`intern-${internId}`, 'intern', 0, [
      { type: 'InternSuspended', data: { at }, metadata: METADATA },
    ]);
    const stored: { event_id: string; type: string }[] = await dataSource.query(
      'SELECT event_id::text, type FROM runs.events ORDER BY global_position',
    );
    const sourceOf = (type: string, nth = 0) => stored.filter((row) => row.type === type)[nth].event_id;

    await runsRelay.onApplicationBootstrap();
    await lifecycleRelay.start();
    try {
      await eventually(async () => (await runsRelay.lag()) === 0 && (await lifecycleRelay.lag()) === 0, 'both relays to catch up');
      const messages = await streamMessages(nc, subjects.eventStreamName('runs'), 10);
      expect(messages.map((message) => message.subject)).toEqual(
        ['run.started', 'question.opened', 'run.cancelled', 'run.started', 'run.prompt_joined', 'run.failed'].map(
          (type) => `${prefix}.evt.runs.${type}`,
        ),
      );
      expect(messages.map((message) => message.headers?.get('Nats-Msg-Id'))).toEqual(messages.map((message) => message.json<IntegrationEvent>().id));
      const ref = { intern_id: internId, session_id: sessionId };
      expect(messages.map((message) => message.json<IntegrationEvent>())).toEqual([
        envelope('run.started', sourceOf('RunStarted'), 2, at, {
          ...ref, run_id: first, origin: 'invoke', user_id: null, api_key_id: 'org-key-1', model: 'local/scripted', approval_mode: 'manual',
        }),
        envelope('question.opened', sourceOf('QuestionAsked'), 4, expect.any(String), {
          ...ref, run_id: first, tool_call_id: 'call-1', arguments: question, expires_at: '2030-01-01T10:05:00.000Z',
        }),
        envelope('run.cancelled', sourceOf('RunCancelled'), 6, '2030-01-01T10:05:00.000Z', {
          ...ref, run_id: first, origin: 'invoke', reason: 'interaction_deadline',
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
        }),
        envelope('run.started', sourceOf('RunStarted', 1), 7, at, {
          ...ref, run_id: second, origin: 'invoke', user_id: null, api_key_id: 'org-key-1', model: 'local/scripted', approval_mode: 'self-drive',
        }),
        envelope('run.prompt_joined', sourceOf('PromptJoined'), 8, at, { ...ref, run_id: second }),
        envelope('run.failed', sourceOf('RunFinished'), 9, '2030-01-01T10:06:00.000Z', {
          ...ref, run_id: second, origin: 'invoke', finish_reason: 'error', usage: null, error: { reason: 'model_error', message: 'boom' },
        }),
      ]);
      expect((await jsm.streams.info(subjects.eventStreamName('lifecycle'))).state.messages).toBe(1);
    } finally {
      await runsRelay.onApplicationShutdown();
      await lifecycleRelay.stop();
    }
  });
});

/** The integration event the relay publishes for source event `sourceId` (stream version `sequence`). */
function envelope(type: IntegrationEvent['type'], sourceId: string, sequence: number, createdAt: unknown, data: Record<string, unknown>) {
  return {
    id: integrationEventId(sourceId, type),
    type,
    version: 1,
    created_at: createdAt,
    workspace_id: null,
    sequence,
    correlation_id: METADATA.correlation_id,
    data,
  };
}
