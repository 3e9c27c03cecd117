import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamClient, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { eventTypeToken, subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { FactsApplier } from '../facts/facts-applier';
import { ANALYTICS_MIGRATIONS } from '../migrations';
import { EventStreamConsumer } from './event-stream-consumer';
import type { EventSource, IntegrationEvent } from './integration-event';
import { ANALYTICS_DURABLE } from './integration-events.consumers';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const WORKSPACE = '11111111-1111-4111-8111-111111111111';

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 8_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

/** Builds events as the outbox relays publish them, stream versions counted per stream. */
class EventFactory {
  private readonly versions = new Map<string, number>();

  event(streamId: string, type: string, data: Record<string, unknown>): IntegrationEvent {
    const version = (this.versions.get(streamId) ?? 0) + 1;
    this.versions.set(streamId, version);
    return {
      event_id: randomUUID(),
      type,
      stream_id: streamId,
      stream_version: version,
      schema_version: 1,
      data,
      metadata: { correlation_id: randomUUID(), causation_id: null, actor: null },
      created_at: new Date().toISOString(),
    };
  }
}

interface RunFactRow {
  run_id: string;
  session_id: string;
  intern_id: string | null;
  workspace_id: string | null;
  organization_id: string | null;
  caller_id: string | null;
  user_id: string | null;
  api_key_id: string | null;
  origin: string | null;
  model: string | null;
  approval_mode: string | null;
  prompt_count: number;
  finish_reason: string | null;
  error_reason: string | null;
  cancel_reason: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  started_at: Date | null;
  ended_at: Date | null;
  latency_ms: string | null;
}

describe('analytics integration events consumer', () => {
  const subjects = subjectsFor(testNatsPrefix());
  const factory = new EventFactory();
  const consumers: EventStreamConsumer[] = [];
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

  function startConsumer(source: EventSource, apply: Pick<FactsApplier, 'apply'> = applier): EventStreamConsumer {
    const consumer = new EventStreamConsumer({
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

  async function publish(source: EventSource, ...events: IntegrationEvent[]): Promise<void> {
    for (const event of events) {
      await js.publish(subjects.event(source, eventTypeToken(event.type)), JSON.stringify(event), { msgID: event.event_id });
    }
  }

  async function runFact(runId: string): Promise<RunFactRow | undefined> {
    const rows: RunFactRow[] = await dataSource.query('SELECT * FROM analytics.run_facts WHERE run_id = $1', [runId]);
    return rows[0];
  }

  async function processed(eventIds: string[]): Promise<number> {
    const rows: { n: number }[] = await dataSource.query(
      'SELECT count(*)::int AS n FROM analytics.processed_events WHERE event_id = ANY($1::uuid[])',
      [eventIds],
    );
    return rows[0].n;
  }

  /** Everything the durable consumer was given has been acknowledged. */
  function drained(source: EventSource) {
    return eventually(
      () => jsm.consumers.info(subjects.eventStreamName(source), ANALYTICS_DURABLE),
      (info) => info.num_pending === 0 && info.num_ack_pending === 0,
    );
  }

  /** A run's events: its session, the run, usage, its end. */
  function aRun(options: { internId?: string; callerId?: string; origin?: string } = {}) {
    const sessionStream = `session-${randomUUID()}`;
    const runId = randomUUID();
    const internId = options.internId ?? randomUUID();
    return {
      runId,
      sessionId: sessionStream.slice('session-'.length),
      internId,
      opened: factory.event(sessionStream, 'SessionOpened', {
        sessionId: sessionStream.slice('session-'.length),
        internId,
        callerId: options.callerId ?? 'member:alice',
        origin: options.origin ?? 'chat',
        at: '2030-01-01T10:00:00.000Z',
      }),
      started: factory.event(sessionStream, 'RunStarted', {
        runId,
        prompt: '/say hi',
        approvalMode: 'manual',
        model: 'local/scripted',
        ownerId: 'runs-1',
        at: '2030-01-01T10:00:00.000Z',
      }),
      usage: (promptTokens: number, completionTokens: number) =>
        factory.event(sessionStream, 'UsageRecorded', { runId, promptTokens, completionTokens }),
      finished: factory.event(sessionStream, 'RunFinished', {
        runId,
        finishReason: 'stop',
        error: null,
        usage: null,
        at: '2030-01-01T10:00:01.250Z',
      }),
    };
  }

  function internCreated(internId: string, extra: Record<string, unknown> = {}): IntegrationEvent {
    return factory.event(`intern-${internId}`, 'InternCreated', {
      internId,
      organizationId: 'acme',
      workspaceId: WORKSPACE,
      createdBy: 'alice',
      name: 'helper',
      description: null,
      instructions: null,
      model: null,
      vaultId: randomUUID(),
      attachedVaultId: null,
      iconSha256: 'ab',
      at: '2030-01-01T09:00:00.000Z',
      ...extra,
    });
  }

  it('creates the streams it consumes when their relays have not created them yet', async () => {
    await startBoth();
    const lifecycle = await jsm.streams.info(subjects.eventStreamName('lifecycle'));
    const runs = await jsm.streams.info(subjects.eventStreamName('runs'));
    expect(lifecycle.config.subjects).toEqual([subjects.eventsOf('lifecycle')]);
    expect(runs.config.subjects).toEqual([subjects.eventsOf('runs')]);
  });

  it('applies a run once, joined with its session and intern, whatever order the events arrive in', async () => {
    await startBoth();
    const run = aRun({ callerId: 'key:org-key-1', origin: 'invoke' });
    const usage = [run.usage(3, 5), run.usage(2, 1)];
    const created = internCreated(run.internId);
    // The run's end and usage first, its start next, its session after, its intern last.
    await publish('runs', run.finished, ...usage, run.started);
    await eventually(() => runFact(run.runId), (row) => row?.started_at != null && row.completion_tokens === 6);
    await publish('runs', run.opened);
    await eventually(() => runFact(run.runId), (row) => row?.origin === 'invoke');
    await publish('lifecycle', created);

    const row = await eventually(() => runFact(run.runId), (found) => found?.workspace_id != null);
    expect(row).toEqual({
      run_id: run.runId,
      session_id: run.sessionId,
      intern_id: run.internId,
      workspace_id: WORKSPACE,
      organization_id: 'acme',
      caller_id: 'key:org-key-1',
      user_id: null,
      api_key_id: 'org-key-1',
      origin: 'invoke',
      model: 'local/scripted',
      approval_mode: 'manual',
      prompt_count: 1,
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
    const ids = [run.finished, ...usage, run.started, run.opened, created].map((event) => event.event_id);
    expect(await processed(ids)).toBe(ids.length);
  });

  it('joins a run with its session and intern when their events are applied at the same moment', async () => {
    const runs = Array.from({ length: 15 }, () => aRun());
    await Promise.all(
      runs.flatMap((run) => [
        applier.apply('runs', run.started),
        applier.apply('runs', run.opened),
        applier.apply('lifecycle', internCreated(run.internId)),
      ]),
    );
    const rows: RunFactRow[] = await dataSource.query('SELECT * FROM analytics.run_facts WHERE run_id = ANY($1)', [
      runs.map((run) => run.runId),
    ]);
    expect(rows).toHaveLength(runs.length);
    for (const row of rows) {
      expect(row).toMatchObject({ user_id: 'alice', origin: 'chat', workspace_id: WORKSPACE, organization_id: 'acme' });
    }
  });

  it('keeps the latest intern fields and every status change, whatever order the events arrive in', async () => {
    await startBoth();
    const internId = randomUUID();
    const stream = `intern-${internId}`;
    const created = internCreated(internId, { model: 'acme/a' });
    const later = [
      factory.event(stream, 'InternUpdated', { changes: { model: 'acme/b' }, at: '2030-01-01T09:01:00.000Z' }),
      factory.event(stream, 'ProvisionRequested', { attempt: 1, at: '2030-01-01T09:02:00.000Z' }),
      factory.event(stream, 'ProvisioningStarted', { attempt: 1, at: '2030-01-01T09:02:01.000Z' }),
      ...[1, 2, 3, 4].map((step) =>
        factory.event(stream, 'ProvisioningStepCompleted', { attempt: 1, step, hostname: null, at: '2030-01-01T09:02:02.000Z' }),
      ),
    ];
    await publish('lifecycle', ...later.reverse(), created);
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
    const changes: { status: string }[] = await dataSource.query(
      'SELECT status FROM analytics.intern_status_changes WHERE intern_id = $1 ORDER BY stream_version',
      [internId],
    );
    expect(changes.map((change) => change.status)).toEqual(['stopped', 'queued', 'provisioning', 'running']);
  });

  it('changes nothing when an event is applied again (its ack was lost after the commit)', async () => {
    await startBoth();
    const run = aRun();
    const usage = run.usage(4, 4);
    expect(await applier.apply('runs', usage)).toBe('applied');
    expect(await applier.apply('runs', usage)).toBe('duplicate');
    await publish('runs', usage);
    await drained('runs');
    expect(await runFact(run.runId)).toMatchObject({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
  });

  it('applies a message JetStream redelivers (nak after the commit) once', async () => {
    const outcomes: string[] = [];
    const losesFirstAck: Pick<FactsApplier, 'apply'> = {
      async apply(source, event) {
        const outcome = await applier.apply(source, event);
        outcomes.push(outcome);
        if (outcomes.length === 1) throw new Error('connection lost before the ack');
        return outcome;
      },
    };
    startConsumer('runs', losesFirstAck);
    await consumerReady('runs');
    const run = aRun();
    await publish('runs', run.usage(7, 1));
    await drained('runs');
    expect(outcomes).toEqual(['applied', 'duplicate']);
    expect(await runFact(run.runId)).toMatchObject({ prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 });
  });

  it('loses nothing published while it is stopped', async () => {
    const first = startConsumer('runs');
    await consumerReady('runs');
    await first.stop();
    const run = aRun();
    await publish('runs', run.opened, run.started, run.usage(1, 2), run.finished);
    await sleep(200);
    expect(await runFact(run.runId)).toBeUndefined();

    startConsumer('runs');
    const row = await eventually(() => runFact(run.runId), (found) => found?.finish_reason === 'stop');
    expect(row).toMatchObject({ user_id: 'alice', origin: 'chat', prompt_tokens: 1, completion_tokens: 2, latency_ms: '1250' });
  });

  it('shares the durable consumer between replicas, applying each event once', async () => {
    startConsumer('runs');
    startConsumer('runs');
    await consumerReady('runs');
    const run = aRun();
    const usage = Array.from({ length: 40 }, () => run.usage(1, 1));
    await publish('runs', run.opened, run.started, ...usage, run.finished);
    await eventually(() => runFact(run.runId), (found) => found?.prompt_tokens === 40 && found.finish_reason === 'stop');
    await drained('runs');
    expect(await runFact(run.runId)).toMatchObject({ prompt_tokens: 40, completion_tokens: 40, prompt_count: 1 });
  });

  it('drops a message that is not an integration event and goes on', async () => {
    startConsumer('runs');
    await consumerReady('runs');
    await js.publish(subjects.event('runs', 'garbage'), 'not json', { msgID: randomUUID() });
    const run = aRun();
    await publish('runs', run.opened, run.started);
    await eventually(() => runFact(run.runId), (found) => found?.started_at != null);
    await drained('runs');
    expect(warnings.some((warning) => warning.includes('message is not JSON'))).toBe(true);
  });
});
