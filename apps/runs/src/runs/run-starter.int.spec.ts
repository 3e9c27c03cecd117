/**
 * RunStarter on the real store and NATS with the scripted model: a start is recorded as going with this replica
 * as owner and held by the registry; MAX_RUNS_PER_INTERN refuses a start past it (the refused start leaves no
 * trace), also when the starts come at once; a start from a lookup older than the intern's runs being ended is
 * refused; runs left behind by a replica that died are reaped once, and the start goes through. The run's first
 * model turn is asked for while the start statement is still waiting, and a refused start aborts it.
 */
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { DomainError, subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { type EventMetadata, PostgresEventStore } from '@interns/event-store';
import { SessionChannel } from '@interns/messaging';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import type { ModelStreamEvent, ModelTurnRequest } from '../agent/model-provider';
import { ScriptedModelProvider } from '../agent/providers/scripted.provider';
import { RUNS_MIGRATIONS, RUNS_SCHEMA } from '../migrations';
import type { RuntimeDriver } from '../runtime/runtime-driver';
import { sessionReadModelProjection } from '../sessions/session-read-model.projection';
import { SessionStreams } from '../sessions/session-streams';
import { OrphanReaper } from './orphan-reaper';
import { ensureRunChunkStream } from './run-chunk-log';
import { RunRegistry } from './run-registry';
import type { RunEnvironment } from './run-spec';
import { InternHaltedError, type RunStart, RunStarter } from './run-starter';

const METADATA: EventMetadata = { correlation_id: 'c-starter', causation_id: null, actor: 'member:alice' };

/** The scripted model, noting each turn it is asked for (with the request's signal). */
class NotingProvider extends ScriptedModelProvider {
  readonly asked: ModelTurnRequest[] = [];

  override streamTurn(request: ModelTurnRequest): AsyncIterable<ModelStreamEvent> {
    this.asked.push(request);
    return super.streamTurn(request);
  }
}

describe('RunStarter', () => {
  const subjects = subjectsFor(testNatsPrefix());
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let env: RunEnvironment;
  let registry: RunRegistry;
  let starter: RunStarter;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: RUNS_SCHEMA, migrations: RUNS_MIGRATIONS, applicationName: 'run-starter.int.spec', migrate: true });
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    await ensureRunChunkStream(nc, subjects, { runReplayRetentionMs: 60_000, executionDeadlineMs: 60_000, jetstreamMaxBytes: 1024 ** 2, jetstreamReplicas: 1 });
    // No script here runs a shell: a call would fail the run, and the spec with it.
    const runtime = { runShell: () => Promise.reject(new Error('this spec runs no shell')) } as unknown as RuntimeDriver;
    const settings = { interactionDeadlineMs: 60_000, executionDeadlineMs: 60_000, streamHeartbeatMs: 60_000, maxToolCallsPerRun: 10 };
    const streams = new SessionStreams(new PostgresEventStore(dataSource, { schema: RUNS_SCHEMA, projections: [sessionReadModelProjection] }));
    env = { nc, subjects, streams, runtime, settings };
    const channel = new SessionChannel(nc, subjects.runs);
    registry = new RunRegistry(channel);
    starter = new RunStarter(env, registry, new OrphanReaper(registry, env, channel, dataSource, 60_000), 1);
  });

  afterAll(async () => {
    await registry?.shutdown();
    if (nc) await (await jetstreamManager(nc)).streams.delete(subjects.runChunkStreamName);
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  /** A start on a new session of `internId` whose run waits on a question, so it stays going. */
  const waitingStart = (internId: string): RunStart => ({
    sessionId: randomUUID(),
    internId,
    callerId: 'member:alice',
    origin: 'invoke',
    model: 'local/scripted',
    provider: new ScriptedModelProvider(),
    approvalMode: 'manual',
    instructions: null,
    prompt: '/ask who is there?',
    stream: null,
    correlationId: 'c-starter',
    openSession: true,
    haltSeq: 0,
  });

  const goingRunsOf = async (internId: string) =>
    dataSource.query(`SELECT session_id, owner_id FROM runs.runs WHERE intern_id = $1 AND status IN ('running', 'awaiting_input')`, [internId]);

  it('records the run as going with this replica as its owner, and holds it here', async () => {
    const internId = randomUUID();
    const start = waitingStart(internId);
    await starter.start(start);
    expect(await goingRunsOf(internId)).toEqual([{ session_id: start.sessionId, owner_id: registry.ownerId }]);
    expect(registry.holds(start.sessionId)).toBe(true);
  });

  it('refuses a start past MAX_RUNS_PER_INTERN as busy, and records nothing of it', async () => {
    const internId = randomUUID();
    const first = waitingStart(internId);
    await starter.start(first);
    const refused = starter.start(waitingStart(internId));
    await expect(refused).rejects.toBeInstanceOf(DomainError);
    await expect(refused).rejects.toMatchObject({ reason: 'busy' });
    expect(await goingRunsOf(internId)).toEqual([{ session_id: first.sessionId, owner_id: registry.ownerId }]);
  });

  it('lets exactly MAX_RUNS_PER_INTERN of concurrent starts of one intern through, the others busy', async () => {
    const internId = randomUUID();
    // Runs that sleep long stay going whatever else the spec does meanwhile.
    const sleeping = () => ({ ...waitingStart(internId), prompt: '/sleep 60000' });
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => starter.start(sleeping())));
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const refusals = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(refusals).toHaveLength(5);
    for (const refusal of refusals) expect(refusal).toMatchObject({ reason: 'busy' });
    expect(await goingRunsOf(internId)).toHaveLength(1);
  });

  it('refuses a start looked up before the intern\'s runs were ended, recording nothing, and takes one looked up after', async () => {
    const internId = randomUUID();
    await dataSource.query('SELECT runs.halt_intern($1)', [internId]);
    const stale = waitingStart(internId);
    await expect(starter.start(stale)).rejects.toBeInstanceOf(InternHaltedError);
    expect(await dataSource.query('SELECT 1 FROM runs.sessions WHERE id = $1', [stale.sessionId])).toEqual([]);
    expect(registry.holds(stale.sessionId)).toBe(false);
    const fresh = { ...waitingStart(internId), haltSeq: 1 };
    await starter.start(fresh);
    expect(await goingRunsOf(internId)).toEqual([{ session_id: fresh.sessionId, owner_id: registry.ownerId }]);
  });

  it('reaps the runs a dead replica left behind once the intern is full, then starts', async () => {
    const internId = randomUUID();
    const orphanSession = randomUUID();
    const orphanRun = randomUUID();
    const at = new Date().toISOString();
    await env.streams.execute(
      orphanSession,
      [
        { type: 'OpenSession', sessionId: orphanSession, internId, callerId: 'member:alice', origin: 'chat', at },
        { type: 'StartRun', runId: orphanRun, prompt: 'go', approvalMode: 'manual', model: 'local/scripted', ownerId: 'gone', origin: 'chat', at },
      ],
      METADATA,
    );
    const start = waitingStart(internId);
    await starter.start(start);
    const [orphan] = await dataSource.query('SELECT status, end_reason FROM runs.runs WHERE id = $1', [orphanRun]);
    expect(orphan).toEqual({ status: 'failed', end_reason: 'owner_lost' });
    expect(await goingRunsOf(internId)).toEqual([{ session_id: start.sessionId, owner_id: registry.ownerId }]);
  });

  it('asks the model for the first turn while the start statement waits, and the run reads that turn', async () => {
    const internId = randomUUID();
    const provider = new NotingProvider();
    // Another transaction holds the intern's start lock: the start statement waits on it.
    const holder = dataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended('runs:intern:' || $1, 0))`, [internId]);
      let settled = false;
      const starting = starter.start({ ...waitingStart(internId), provider, prompt: '/say early' }).finally(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(settled).toBe(false);
      expect(provider.asked).toHaveLength(1);
      expect(provider.asked[0].messages).toEqual([{ role: 'user', content: '/say early' }]);
      await holder.commitTransaction();
      const run = await starting;
      await run.finished;
      // The one turn the run had was the early one: the model was not asked again.
      expect(provider.asked).toHaveLength(1);
      const [ended] = await dataSource.query('SELECT status, finish_reason FROM runs.runs WHERE session_id = $1', [run.sessionId]);
      expect(ended).toEqual({ status: 'completed', finish_reason: 'stop' });
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  });

  it('aborts the model turn it asked for when the start is refused', async () => {
    const internId = randomUUID();
    await dataSource.query('SELECT runs.halt_intern($1)', [internId]);
    const provider = new NotingProvider();
    await expect(starter.start({ ...waitingStart(internId), provider, prompt: '/sleep 60000' })).rejects.toBeInstanceOf(InternHaltedError);
    expect(provider.asked).toHaveLength(1);
    expect(provider.asked[0].signal.aborted).toBe(true);
    expect(provider.asked[0].signal.reason).toBeInstanceOf(InternHaltedError);
  });
});
