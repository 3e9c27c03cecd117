/**
 * The orphan reaper ends the runs nobody serves any more, as RUN_ENDINGS says (`owner_lost`: failed, an
 * internal_error chunk; the intern ending them: cancelled, run_ended), closes their chunk logs for their readers,
 * and leaves alone a run whose owner still answers or that this replica holds.
 */
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { decodeStreamFrame, subjectsFor } from '@interns/contracts';
import type { ChatChunk } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { type EventMetadata, PostgresEventStore } from '@interns/event-store';
import { SessionChannel } from '@interns/messaging';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { RUNS_MIGRATIONS, RUNS_SCHEMA } from '../migrations';
import { sessionReadModelProjection } from '../sessions/session-read-model.projection';
import { SessionStreams } from '../sessions/session-streams';
import { OrphanReaper } from './orphan-reaper';
import { ensureRunChunkStream } from './run-chunk-log';
import { RunRegistry } from './run-registry';
import type { RunEnvironment } from './run-spec';

const METADATA: EventMetadata = { correlation_id: 'c-reaper', causation_id: null, actor: 'member:alice' };

describe('OrphanReaper', () => {
  const subjects = subjectsFor(testNatsPrefix());
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let streams: SessionStreams;
  let channel: SessionChannel;
  let registry: RunRegistry;
  let reaper: OrphanReaper;
  const served: Subscription[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: RUNS_SCHEMA, migrations: RUNS_MIGRATIONS, applicationName: 'orphan-reaper.int.spec', migrate: true });
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    await ensureRunChunkStream(nc, subjects, { runReplayRetentionMs: 60_000, executionDeadlineMs: 60_000, jetstreamMaxBytes: 1024 ** 2, jetstreamReplicas: 1 });
    streams = new SessionStreams(new PostgresEventStore(dataSource, { schema: RUNS_SCHEMA, projections: [sessionReadModelProjection] }));
    channel = new SessionChannel(nc, subjects.runs);
    registry = new RunRegistry(channel);
    // The reaper records and closes logs only: the runtime and run settings are the starter's.
    const env = { nc, subjects, streams } as RunEnvironment;
    reaper = new OrphanReaper(registry, env, channel, dataSource, 60_000);
  });

  afterAll(async () => {
    for (const subscription of served) subscription.unsubscribe();
    if (nc) await (await jetstreamManager(nc)).streams.delete(subjects.runChunkStreamName);
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  /** A session of a new intern with one going run, recorded by an owner that is not this replica. */
  async function goingRun(): Promise<{ internId: string; sessionId: string; runId: string }> {
    const internId = randomUUID();
    const sessionId = randomUUID();
    const runId = randomUUID();
    const at = new Date().toISOString();
    await streams.execute(
      sessionId,
      [
        { type: 'OpenSession', sessionId, internId, callerId: 'member:alice', origin: 'chat', at },
        { type: 'StartRun', runId, prompt: 'go', approvalMode: 'manual', model: 'local/scripted', ownerId: 'gone', origin: 'chat', at },
      ],
      METADATA,
    );
    return { internId, sessionId, runId };
  }

  const rowOf = async (runId: string) =>
    (await dataSource.query('SELECT status, finish_reason, end_reason FROM runs.runs WHERE id = $1', [runId]))[0];

  /** The chunk the run's log readers were told last before its final chunk, and whether the log ended with `[DONE]`. */
  async function logEnding(runId: string): Promise<{ told: ChatChunk | undefined; done: boolean }> {
    const jsm = await jetstreamManager(nc);
    const subject = subjects.runs.chunks(runId);
    const { state } = await jsm.streams.info(subjects.runChunkStreamName);
    const chunks: ChatChunk[] = [];
    let done = false;
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const message = await jsm.streams.getMessage(subjects.runChunkStreamName, { seq });
      if (message?.subject !== subject) continue;
      const frame = decodeStreamFrame(message.data);
      done = frame?.kind === 'done';
      if (frame?.kind === 'chunk' && frame.payload !== null) chunks.push(JSON.parse(new TextDecoder().decode(frame.payload)) as ChatChunk);
    }
    return { told: chunks.at(-2), done };
  }

  it('ends a run nobody serves as failed for owner_lost, and tells its log readers the runs service stopped', async () => {
    const { internId, runId } = await goingRun();
    expect(await reaper.reapOrphans(internId)).toBe(1);
    expect(await rowOf(runId)).toEqual({ status: 'failed', finish_reason: 'error', end_reason: 'owner_lost' });
    const { told, done } = await logEnding(runId);
    expect(told).toMatchObject({ error: { metadata: { reason: 'internal_error' }, message: 'the runs service stopped; the run did not finish' } });
    expect(done).toBe(true);
  });

  it('leaves alone a run whose owner answers, and a run this replica holds', async () => {
    const answered = await goingRun();
    served.push(channel.serve(answered.sessionId, async () => ({ ok: true })));
    const held = await goingRun();
    registry.add(held.sessionId, { receive: async () => ({ ok: true }), finished: new Promise(() => undefined), shutdown: async () => undefined });
    expect(await reaper.reapOrphans(answered.internId)).toBe(0);
    expect(await reaper.reapOrphans(held.internId)).toBe(0);
    expect(await rowOf(answered.runId)).toEqual({ status: 'running', finish_reason: null, end_reason: null });
    expect(await rowOf(held.runId)).toEqual({ status: 'running', finish_reason: null, end_reason: null });
  });

  it("ends an intern's runs that have no owner as the intern's ending: cancelled, run_ended", async () => {
    const { internId, runId } = await goingRun();
    await reaper.endRunsOf(internId, 'intern_suspended', 'c-suspend');
    expect(await rowOf(runId)).toEqual({ status: 'cancelled', finish_reason: 'error', end_reason: 'intern_suspended' });
    const { told, done } = await logEnding(runId);
    expect(told).toMatchObject({ error: { metadata: { reason: 'run_ended' }, message: 'the intern was suspended; the run ended' } });
    expect(done).toBe(true);
  });
});
