import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamClient, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { type IntegrationEvent, type InternStatus, subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { FactsApplier } from '../facts/facts-applier';
import { ANALYTICS_MIGRATIONS } from '../migrations';
import { EventFactory, eventually, processed, runFact, statusChanges, WORKSPACE } from '../testing/facts.fixture';
import { factsConsumer } from './event-stream-consumer';
import type { EventSource } from '../facts/integration-event';
import { ANALYTICS_DURABLE } from './integration-events.consumers';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

describe('analytics integration events consumer', () => {
  const subjects = subjectsFor(testNatsPrefix());
  const factory = new EventFactory();
  const consumers: ReturnType<typeof factsConsumer>[] = [];
  const warnings: string[] = [];
  const logger = { log: () => undefined, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let applier: FactsApplier;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: 'analytics',
      migrations: ANALYTICS_MIGRATIONS,
      applicationName: 'event-stream-consumer.int.spec',
      migrate: true,
    });
    nc = await connect({ servers: NATS_URL, name: 'event-stream-consumer.int.spec' });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    applier = new FactsApplier(dataSource);
  });

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
  });

  afterAll(async () => {
    for (const source of ['lifecycle', 'runs'] as const) {
      await jsm?.streams.delete(subjects.eventStreamName(source)).catch(() => undefined);
    }
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  function startConsumer(source: EventSource, apply: Pick<FactsApplier, 'apply'> = applier): ReturnType<typeof factsConsumer> {
    const consumer = factsConsumer({
      nats: nc,
      source,
      streamName: subjects.eventStreamName(source),
      streamSubjects: [subjects.eventsOf(source)],
      durableName: ANALYTICS_DURABLE,
      applier: apply,
      nakDelayMs: 50,
      retryDelayMs: 20,
      logger,
    });
    consumers.push(consumer);
    consumer.start();
    return consumer;
  }

  /** Starts a consumer of each source and waits until both durable consumers exist. */
  async function startBoth(): Promise<void> {
    startConsumer('lifecycle');
    startConsumer('runs');
    await Promise.all([consumerReady('lifecycle'), consumerReady('runs')]);
  }

  function consumerReady(source: EventSource) {
    return eventually(
      () => jsm.consumers.info(subjects.eventStreamName(source), ANALYTICS_DURABLE).then(() => true, () => false),
      (ready) => ready,
    );
  }

  async function publish(...events: IntegrationEvent[]): Promise<void> {
    for (const event of events) {
      await js.publish(subjects.integrationEvent(event.type), JSON.stringify(event), { msgID: event.id });
    }
  }

  /** Everything the durable consumer was given has been acknowledged. */
  function drained(source: EventSource) {
    return eventually(
      () => jsm.consumers.info(subjects.eventStreamName(source), ANALYTICS_DURABLE),
      (info) => info.num_pending === 0 && info.num_ack_pending === 0,
    );
  }

  const fact = (runId: string) => runFact(dataSource, runId);

  it('creates the streams it consumes when their relays have not created them yet', async () => {
    await startBoth();
    const lifecycle = await jsm.streams.info(subjects.eventStreamName('lifecycle'));
    const runs = await jsm.streams.info(subjects.eventStreamName('runs'));
    expect(lifecycle.config.subjects).toEqual([subjects.eventsOf('lifecycle')]);
    expect(runs.config.subjects).toEqual([subjects.eventsOf('runs')]);
  });

  it('applies a run once, joined with its intern, whatever order the events arrive in', async () => {
    await startBoth();
    const run = factory.run({ user: null, apiKey: 'org-key-1', origin: 'invoke' });
    const joined = [run.joined(), run.joined()];
    const completed = run.completed(5, 6);
    const created = factory.internCreated(run.internId);
    // The run's end and steering first, its start next, its intern last.
    await publish(completed, ...joined);
    await eventually(() => fact(run.runId), (row) => row?.completion_tokens === 6 && row.prompt_count === 2);
    await publish(run.started);
    await eventually(() => fact(run.runId), (row) => row?.started_at != null);
    await publish(created);

    const row = await eventually(() => fact(run.runId), (found) => found?.workspace_id != null);
    expect(row).toEqual({
      run_id: run.runId,
      session_id: run.sessionId,
      intern_id: run.internId,
      workspace_id: WORKSPACE,
      organization_id: 'acme',
      user_id: null,
      api_key_id: 'org-key-1',
      origin: 'invoke',
      model: 'local/scripted',
      approval_mode: 'manual',
      prompt_count: 3,
      finish_reason: 'stop',
      error_reason: null,
      cancel_reason: null,
      prompt_tokens: 5,
      completion_tokens: 6,
      total_tokens: 11,
      started_at: new Date('2030-01-01T10:00:00.000Z'),
      ended_at: new Date('2030-01-01T10:00:01.250Z'),
      latency_ms: '1250',
    });
    const ids = [completed, ...joined, run.started, created].map((event) => event.id);
    expect(await processed(dataSource, ids)).toBe(ids.length);
  });

  it('keeps the latest intern fields and every status change, whatever order the events arrive in', async () => {
    await startBoth();
    const internId = randomUUID();
    const created = factory.internCreated(internId, { model: 'acme/a' });
    const status = (now: InternStatus, previous: InternStatus | null, at: string, step: number | null = null) =>
      factory.event(
        internId,
        'intern.status_changed',
        {
          intern_id: internId,
          status: now,
          previous_status: previous,
          progress: step === null ? null : { step_label: `step ${step}`, step_number: step, total_steps: 4 },
        },
        at,
      );
    const stopped = status('stopped', null, '2030-01-01T09:00:00.000Z');
    const later = [
      factory.event(internId, 'intern.updated', { intern_id: internId, name: 'helper', description: null, model: 'acme/b' }),
      status('queued', 'stopped', '2030-01-01T09:02:00.000Z'),
      status('provisioning', 'queued', '2030-01-01T09:02:01.000Z', 1),
      ...[2, 3, 4].map((step) => status('provisioning', 'provisioning', '2030-01-01T09:02:01.500Z', step)),
      status('running', 'provisioning', '2030-01-01T09:02:02.000Z'),
    ];
    await publish(...later.reverse(), stopped, created);
    await drained('lifecycle');

    const [intern] = await dataSource.query('SELECT * FROM analytics.intern_facts WHERE intern_id = $1', [internId]);
    expect(intern).toMatchObject({
      organization_id: 'acme',
      workspace_id: WORKSPACE,
      created_by: 'alice',
      name: 'helper',
      model: 'acme/b',
      status: 'running',
      status_at: new Date('2030-01-01T09:02:02.000Z'),
      destroyed_at: null,
    });
    expect(await statusChanges(dataSource, internId)).toEqual(['stopped', 'queued', 'provisioning', 'running']);
  });

  it('changes nothing when an event is applied again (its ack was lost after the commit)', async () => {
    await startBoth();
    const run = factory.run();
    const joined = run.joined();
    expect(await applier.apply(joined)).toBe('applied');
    expect(await applier.apply(joined)).toBe('duplicate');
    await publish(joined);
    await drained('runs');
    expect(await fact(run.runId)).toMatchObject({ prompt_count: 1 });
  });

  it('applies a message JetStream redelivers (nak after the commit) once', async () => {
    const outcomes: string[] = [];
    const losesFirstAck: Pick<FactsApplier, 'apply'> = {
      async apply(event) {
        const outcome = await applier.apply(event);
        outcomes.push(outcome);
        if (outcomes.length === 1) throw new Error('connection lost before the ack');
        return outcome;
      },
    };
    startConsumer('runs', losesFirstAck);
    await consumerReady('runs');
    const run = factory.run();
    await publish(run.completed(7, 1));
    await drained('runs');
    expect(outcomes).toEqual(['applied', 'duplicate']);
    expect(await fact(run.runId)).toMatchObject({ prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 });
  });

  it('loses nothing published while it is stopped', async () => {
    const first = startConsumer('runs');
    await consumerReady('runs');
    await first.stop();
    const run = factory.run();
    await publish(run.started, run.completed(1, 2));
    await sleep(200);
    expect(await fact(run.runId)).toBeUndefined();

    startConsumer('runs');
    const row = await eventually(() => fact(run.runId), (found) => found?.finish_reason === 'stop');
    expect(row).toMatchObject({ user_id: 'alice', origin: 'chat', prompt_tokens: 1, completion_tokens: 2, latency_ms: '1250' });
  });

  it('shares the durable consumer between replicas, applying each event once', async () => {
    startConsumer('runs');
    startConsumer('runs');
    await consumerReady('runs');
    const run = factory.run();
    const joined = Array.from({ length: 40 }, () => run.joined());
    await publish(run.started, ...joined, run.completed(1, 1));
    await eventually(() => fact(run.runId), (found) => found?.prompt_count === 41 && found.finish_reason === 'stop');
    await drained('runs');
    expect(await fact(run.runId)).toMatchObject({ prompt_count: 41, prompt_tokens: 1, completion_tokens: 1 });
  });

  it('drops a message that is not an integration event and goes on', async () => {
    startConsumer('runs');
    await consumerReady('runs');
    await js.publish(subjects.integrationEvent('run.started'), 'not json', { msgID: randomUUID() });
    const run = factory.run();
    await publish(run.started);
    await eventually(() => fact(run.runId), (found) => found?.started_at != null);
    await drained('runs');
    expect(warnings.some((warning) => warning.includes('message is not JSON'))).toBe(true);
  });
});
