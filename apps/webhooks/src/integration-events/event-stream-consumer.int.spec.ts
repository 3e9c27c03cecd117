/**
 * The webhooks consumers against real JetStream and PostgreSQL: integration events become one delivery per
 * subscribed endpoint of their workspace (run events routed through `intern.created`), with the contract's
 * payload; redeliveries and republishing add nothing; a run event whose intern is not known yet waits for it; an
 * intern's deletion purges the questions its deliveries quote, and so does TRANSCRIPT_RETENTION_MS.
 */
import { randomUUID } from 'node:crypto';
import { jetstream, type JetStreamClient, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { INTEGRATION_EVENT_TYPES, type IntegrationEvent, type IntegrationEventData, type IntegrationEventType, subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { WEBHOOKS_MIGRATIONS } from '../migrations';
import { QUESTION_PURGE_BATCH, QuestionPayloadPurger } from '../retention/question-payload-purger';
import { eventually, insertEndpoint, WORKSPACE } from '../testing/webhooks.fixture';
import { EventRecorder } from './event-recorder';
import { deliveriesConsumer } from './event-stream-consumer';
import { WEBHOOKS_DURABLE } from './integration-events.consumers';
import { EVENT_SOURCES } from './received-event';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const OTHER_WORKSPACE = '22222222-2222-4222-8222-222222222222';

function event<T extends IntegrationEventType>(type: T, data: IntegrationEventData[T], workspaceId: string | null = WORKSPACE): IntegrationEvent<T> {
  const fromLifecycle = INTEGRATION_EVENT_TYPES[type].source === 'lifecycle';
  return {
    id: randomUUID(),
    type,
    version: 1,
    created_at: '2030-01-01T10:00:00.000Z',
    workspace_id: fromLifecycle ? workspaceId : null,
    sequence: 1,
    correlation_id: randomUUID(),
    data,
  } as IntegrationEvent<T>;
}

const internCreated = (internId: string, workspaceId = WORKSPACE) =>
  event(
    'intern.created',
    { intern_id: internId, organization_id: 'acme', workspace_id: workspaceId, created_by: 'alice', name: 'ada', description: null, model: null },
    workspaceId,
  );

const runRef = (internId: string) => ({ intern_id: internId, run_id: randomUUID(), session_id: randomUUID() });

interface Delivery {
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: string;
}

describe('webhooks integration events consumer', () => {
  const subjects = subjectsFor(testNatsPrefix());
  const warnings: string[] = [];
  const logger = { log: () => undefined, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const consumers: ReturnType<typeof deliveriesConsumer>[] = [];
  let recorded = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: 'webhooks', migrations: WEBHOOKS_MIGRATIONS, applicationName: 'webhooks-consumer.int.spec', migrate: true });
    nc = await connect({ servers: NATS_URL, name: 'webhooks-consumer.int.spec' });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    const recorder = new EventRecorder(dataSource, new QuestionPayloadPurger(dataSource));
    for (const source of EVENT_SOURCES) {
      const consumer = deliveriesConsumer({
        nats: nc,
        source,
        streamName: subjects.eventStreamName(source),
        streamSubjects: [subjects.eventsOf(source)],
        durableName: WEBHOOKS_DURABLE,
        recorder,
        onRecorded: () => (recorded += 1),
        nakDelayMs: 50,
        retryDelayMs: 20,
        logger,
      });
      consumers.push(consumer);
      consumer.start();
    }
    for (const source of EVENT_SOURCES) {
      await eventually(
        () => jsm.consumers.info(subjects.eventStreamName(source), WEBHOOKS_DURABLE).then(() => true, () => false),
        (ready) => ready,
      );
    }
  });

  afterEach(async () => {
    await dataSource.query('DELETE FROM webhooks.endpoints');
  });

  afterAll(async () => {
    await Promise.all(consumers.map((consumer) => consumer.stop()));
    for (const source of EVENT_SOURCES) await jsm?.streams.delete(subjects.eventStreamName(source)).catch(() => undefined);
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  async function publish(...events: IntegrationEvent[]): Promise<void> {
    for (const published of events) {
      await js.publish(subjects.integrationEvent(published.type), JSON.stringify(published), { msgID: published.id });
    }
  }

  const deliveriesOf = (eventId: string): Promise<Delivery[]> =>
    dataSource.query('SELECT endpoint_id, event_id, event_type, payload, status FROM webhooks.deliveries WHERE event_id = $1 ORDER BY endpoint_id', [eventId]);

  const drained = () =>
    Promise.all(
      EVENT_SOURCES.map((source) =>
        eventually(
          () => jsm.consumers.info(subjects.eventStreamName(source), WEBHOOKS_DURABLE),
          (info) => info.num_pending === 0 && info.num_ack_pending === 0,
        ),
      ),
    );

  it("records one delivery per subscribed endpoint of the event's workspace, with the contract's payload", async () => {
    const internId = randomUUID();
    const all = await insertEndpoint(dataSource, { url: 'https://a.example/', events: ['intern.status_changed', 'run.completed'] });
    const runsOnly = await insertEndpoint(dataSource, { url: 'https://b.example/', events: ['run.completed'] });
    await insertEndpoint(dataSource, { url: 'https://c.example/', events: ['intern.status_changed'], workspaceId: OTHER_WORKSPACE });
    const statusChanged = event('intern.status_changed', { intern_id: internId, status: 'provisioning', previous_status: 'queued', progress: null });
    await publish(internCreated(internId), statusChanged);

    const rows = await eventually(() => deliveriesOf(statusChanged.id), (found) => found.length > 0);
    expect(rows).toEqual([expect.objectContaining({ endpoint_id: all.id, event_type: 'intern.status_changed', status: 'pending' })]);
    expect(JSON.parse(rows[0].payload)).toEqual({
      id: statusChanged.id,
      type: 'intern.status_changed',
      created_at: statusChanged.created_at,
      workspace_id: WORKSPACE,
      data: { intern_id: internId, status: 'provisioning', previous_status: 'queued', progress: null },
    });
    expect(recorded).toBeGreaterThan(0);

    const completed = event('run.completed', { ...runRef(internId), origin: 'chat', finish_reason: 'stop', usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
    await publish(completed);
    const runRows = await eventually(() => deliveriesOf(completed.id), (found) => found.length === 2);
    expect(runRows.map((row) => row.endpoint_id).sort()).toEqual([all.id, runsOnly.id].sort());
    expect(JSON.parse(runRows[0].payload)).toMatchObject({ type: 'run.completed', workspace_id: WORKSPACE, data: completed.data });
  });

  it("routes a run event by its intern's workspace and strips what the contract does not list (run.failed's error)", async () => {
    const internId = randomUUID();
    const endpoint = await insertEndpoint(dataSource, { url: 'https://o.example/', events: ['run.failed'], workspaceId: OTHER_WORKSPACE });
    await insertEndpoint(dataSource, { url: 'https://m.example/', events: ['run.failed'] });
    const failed = event('run.failed', {
      ...runRef(internId),
      origin: 'invoke',
      finish_reason: 'error',
      usage: null,
      error: { reason: 'internal_error', message: 'the provider is down' },
    });
    await publish(internCreated(internId, OTHER_WORKSPACE), failed);

    const [row] = await eventually(() => deliveriesOf(failed.id), (found) => found.length > 0);
    expect(row.endpoint_id).toBe(endpoint.id);
    const payload = JSON.parse(row.payload);
    expect(payload.workspace_id).toBe(OTHER_WORKSPACE);
    expect(payload.data).toEqual({ ...failed.data, error: undefined });
    expect(Object.keys(payload.data)).not.toContain('error');
  });

  it('adds nothing for a redelivered or republished event', async () => {
    const internId = randomUUID();
    await insertEndpoint(dataSource, { url: 'https://d.example/', events: ['question.opened'] });
    const question = event('question.opened', {
      ...runRef(internId),
      tool_call_id: 'call_1',
      arguments: { kind: 'elicitation', message: 'which?', fields: [{ name: 'answer', type: 'string', required: true }] },
      expires_at: '2030-01-01T10:05:00.000Z',
    } as IntegrationEventData['question.opened']);
    await publish(internCreated(internId), question);
    await eventually(() => deliveriesOf(question.id), (found) => found.length === 1);
    // The relay republishing after its window (a new message, the same event id).
    await js.publish(subjects.integrationEvent('question.opened'), JSON.stringify(question), { msgID: randomUUID() });
    await drained();
    expect(await deliveriesOf(question.id)).toHaveLength(1);
  });

  it("holds a run event back until its intern's workspace is known, then records it", async () => {
    const internId = randomUUID();
    await insertEndpoint(dataSource, { url: 'https://e.example/', events: ['run.completed'] });
    const completed = event('run.completed', { ...runRef(internId), origin: 'chat', finish_reason: 'length', usage: null });
    await publish(completed);
    await eventually(async () => warnings.some((warning) => warning.includes(completed.id)), (held) => held);
    expect(await deliveriesOf(completed.id)).toEqual([]);

    await publish(internCreated(internId));
    expect(await eventually(() => deliveriesOf(completed.id), (found) => found.length === 1)).toHaveLength(1);
  });

  it('records nothing for types webhooks do not deliver, nor for events no endpoint subscribes to', async () => {
    const internId = randomUUID();
    await publish(internCreated(internId));
    const started = event('run.started', { ...runRef(internId), origin: 'chat', user_id: 'alice', api_key_id: null, model: 'local/scripted', approval_mode: 'manual' });
    const deleted = event('intern.deleted', { intern_id: internId });
    await publish(started, deleted);
    await drained();
    expect(await deliveriesOf(started.id)).toEqual([]);
    expect(await deliveriesOf(deleted.id)).toEqual([]);
  });
  const questionOpened = (internId: string, wording: string) =>
    event('question.opened', {
      ...runRef(internId),
      tool_call_id: `call_${randomUUID().slice(0, 8)}`,
      arguments: { kind: 'permission', operation: `shell: echo ${wording}`, options: ['allow_once', 'reject_once'] },
      expires_at: '2030-01-01T10:05:00.000Z',
    } as IntegrationEventData['question.opened']);

  it("purges the question of every delivery about an intern once its deletion arrives, and nobody else's", async () => {
    const deleted = randomUUID();
    const other = randomUUID();
    const wording = `MARKER-${randomUUID()}`;
    await insertEndpoint(dataSource, { url: 'https://q.example/', events: ['question.opened'] });
    const questions = [questionOpened(deleted, wording), questionOpened(deleted, wording)];
    const kept = questionOpened(other, wording);
    await publish(internCreated(deleted), internCreated(other), ...questions, kept);
    for (const question of [...questions, kept]) await eventually(() => deliveriesOf(question.id), (found) => found.length === 1);

    await publish(event('intern.deleted', { intern_id: deleted }));
    for (const question of questions) {
      const [row] = await eventually(() => deliveriesOf(question.id), (found) => !found[0].payload.includes(wording));
      // The wording is blanked; the rest of the payload, and the delivery itself, stay.
      expect(JSON.parse(row.payload)).toEqual({
        id: question.id,
        type: 'question.opened',
        created_at: question.created_at,
        workspace_id: WORKSPACE,
        data: { ...question.data, arguments: { kind: 'permission', operation: '', options: ['allow_once', 'reject_once'] } },
      });
      expect(row.status).toBe('pending');
    }
    await drained();
    expect((await deliveriesOf(kept.id))[0].payload).toContain(wording);
  });

  it('purges the question of deliveries recorded longer than TRANSCRIPT_RETENTION_MS ago, in batches', async () => {
    const internId = randomUUID();
    const wording = `MARKER-${randomUUID()}`;
    const endpoint = await insertEndpoint(dataSource, { url: 'https://r.example/', events: ['question.opened'] });
    const elicitation = event('question.opened', {
      ...runRef(internId),
      tool_call_id: 'call_e',
      arguments: { kind: 'elicitation', message: `tell me ${wording}`, fields: [{ name: wording, type: 'string', required: true }] },
      expires_at: '2030-01-01T10:05:00.000Z',
    } as IntegrationEventData['question.opened']);
    await publish(internCreated(internId), elicitation);
    await eventually(() => deliveriesOf(elicitation.id), (found) => found.length === 1);
    // More old question deliveries than a batch: written straight into the table, recorded an hour ago.
    await dataSource.query(
      `INSERT INTO webhooks.deliveries (endpoint_id, event_id, event_type, payload, created_at)
       SELECT $1, gen_random_uuid(), 'question.opened', $2, now() - interval '1 hour' FROM generate_series(1, $3)`,
      [endpoint.id, JSON.stringify({ data: { arguments: { kind: 'permission', operation: wording, options: [] } } }), QUESTION_PURGE_BATCH],
    );
    const purger = new QuestionPayloadPurger(dataSource);

    const retentionMs = 60_000;
    expect(await purger.purgeRecordedBefore(retentionMs)).toBe(QUESTION_PURGE_BATCH);
    expect(await purger.purgeRecordedBefore(retentionMs)).toBe(0);
    // Recorded just now: kept until its own retention.
    expect((await deliveriesOf(elicitation.id))[0].payload).toContain(wording);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await purger.purgeRecordedBefore(200)).toBe(1);
    const [row] = await deliveriesOf(elicitation.id);
    expect(JSON.parse(row.payload).data.arguments).toEqual({ kind: 'elicitation', message: '', fields: [] });
    const [{ n }] = await dataSource.query(`SELECT count(*)::int AS n FROM webhooks.deliveries WHERE strpos(payload, $1) > 0`, [wording]);
    expect(n).toBe(0);
  });
});
