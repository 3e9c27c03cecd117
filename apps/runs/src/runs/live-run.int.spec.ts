import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { subjectsFor } from '@interns/contracts';
import type { SessionMessage } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { type EventMetadata, PostgresEventStore, type StoredEvent } from '@interns/event-store';
import { type SessionOrigin, sessionStreamId } from '@interns/runs-domain';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { ScriptedModelProvider } from '../agent/providers/scripted.provider';
import { RUNS_MIGRATIONS } from '../migrations';
import type { RuntimeDriver } from '../runtime/runtime-driver';
import { sessionReadModelProjection } from '../sessions/session-read-model.projection';
import { SessionStreams } from '../sessions/session-streams';
import { LiveRun } from './live-run';
import { ensureRunChunkStream } from './run-chunk-log';
import type { LiveStream, RunEnvironment } from './run-spec';

const METADATA: EventMetadata = { correlation_id: 'c-1', causation_id: null, actor: 'member:alice' };
const accept = (answer: string) => JSON.stringify({ action: 'accept', content: { answer } });

/**
 * LiveRun as the interpreter of the run workflow, on the real store and NATS with the scripted model: the
 * workflow's decisions (run-workflow.unit.spec.ts) reach the session's record and the caller's replies.
 */
describe('LiveRun', () => {
  const subjects = subjectsFor(testNatsPrefix());
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: PostgresEventStore;
  let nc: NatsConnection;
  let env: RunEnvironment;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: 'runs', migrations: RUNS_MIGRATIONS, applicationName: 'live-run.int.spec', migrate: true });
    store = new PostgresEventStore(dataSource, { schema: 'runs', projections: [sessionReadModelProjection] });
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    await ensureRunChunkStream(nc, subjects, { runReplayRetentionMs: 60_000, executionDeadlineMs: 60_000, jetstreamMaxBytes: 1024 ** 2, jetstreamReplicas: 1 });
    // No script here runs a shell: a call would fail the run, and the spec with it.
    const runtime = { runShell: () => Promise.reject(new Error('this spec runs no shell')) } as unknown as RuntimeDriver;
    const settings = { interactionDeadlineMs: 60_000, executionDeadlineMs: 60_000, streamHeartbeatMs: 60_000, maxToolCallsPerRun: 10 };
    env = { nc, subjects, streams: new SessionStreams(store), runtime, settings };
  });

  afterAll(async () => {
    if (nc) await (await jetstreamManager(nc)).streams.delete(subjects.runChunkStreamName);
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  /** A run started as RunHost starts it, on a new session, running `prompt` with the scripted model. */
  async function startRun(
    prompt: string,
    origin: SessionOrigin,
    stream: LiveStream | null = null,
    settings: Partial<RunEnvironment['settings']> = {},
  ): Promise<{ run: LiveRun; sessionId: string; runId: string }> {
    const sessionId = randomUUID();
    const runId = randomUUID();
    const internId = randomUUID();
    const at = new Date().toISOString();
    const started = await env.streams.execute(
      sessionId,
      [
        { type: 'OpenSession', sessionId, internId, callerId: 'member:alice', origin, at },
        { type: 'StartRun', runId, prompt, approvalMode: 'self-drive', model: 'local/scripted', ownerId: 'owner-1', origin, at },
      ],
      METADATA,
    );
    const spec = {
      sessionId,
      runId,
      internId,
      callerId: 'member:alice',
      origin,
      model: 'local/scripted',
      provider: new ScriptedModelProvider(),
      approvalMode: 'self-drive' as const,
      instructions: null,
      prompt,
      stream,
      correlationId: 'c-1',
    };
    const runEnv = { ...env, settings: { ...env.settings, ...settings } };
    return { run: new LiveRun(spec, runEnv, { version: started.version, state: started.state }), sessionId, runId };
  }

  const recorded = async (sessionId: string): Promise<StoredEvent[]> => (await store.readStream(sessionStreamId(sessionId))).events;
  const typesOf = (events: StoredEvent[]) => events.map((event) => event.type).filter((type) => type !== 'ModelRequested' && type !== 'OutputProduced' && type !== 'UsageRecorded');

  /** The tool call id of the question the run asked, once it is recorded. */
  async function askedQuestion(sessionId: string): Promise<string> {
    for (let attempt = 0; attempt < 200; attempt++) {
      const asked = (await recorded(sessionId)).find((event) => event.type === 'QuestionAsked');
      if (asked !== undefined) return (asked.data as { toolCallId: string }).toolCallId;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the run asked no question');
  }

  const answer = (toolCallId: string, content: string): SessionMessage => ({
    type: 'answer',
    toolCallId,
    content,
    stream: { streamId: randomUUID(), created: 1_800_000_000 },
    approvalMode: 'self-drive',
    correlationId: 'c-2',
  });

  it('waits on its question, refuses an answer to another, goes on with the answer and finishes', async () => {
    const { run, sessionId } = await startRun('/ask who are you?\n/say thanks', 'chat', { streamId: randomUUID(), created: 1_800_000_000 });
    const toolCallId = await askedQuestion(sessionId);
    await expect(run.receive(answer('call_unknown', accept('x')))).resolves.toMatchObject({ ok: false });
    await expect(run.receive({ type: 'probe' })).resolves.toEqual({ ok: true });
    await expect(run.receive(answer(toolCallId, accept('Ada')))).resolves.toEqual({ ok: true });
    await run.finished;

    const events = await recorded(sessionId);
    expect(typesOf(events)).toEqual(['SessionOpened', 'RunStarted', 'QuestionAsked', 'QuestionAnswered', 'RunFinished']);
    expect(events.at(-1)).toMatchObject({ data: { finishReason: 'stop', error: null } });
  });

  it('is cancelled while its question waits: the question is given up, the cancel recorded, then steer and cancel refused as not active', async () => {
    const { run, sessionId, runId } = await startRun('/ask who are you?', 'chat', { streamId: randomUUID(), created: 1_800_000_000 });
    await askedQuestion(sessionId);
    await expect(run.receive({ type: 'cancel', correlationId: 'c-3' })).resolves.toEqual({ ok: true });
    await run.finished;

    const events = await recorded(sessionId);
    expect(events.at(-1)).toMatchObject({ type: 'RunCancelled', data: { runId, reason: 'caller_cancelled' } });
    const refusal = { ok: false, kind: 'service_error', reason: 'run_not_active', message: 'the run has already ended' };
    await expect(run.receive({ type: 'steer', text: 'more', correlationId: 'c-4' })).resolves.toEqual(refusal);
    await expect(run.receive({ type: 'cancel', correlationId: 'c-5' })).resolves.toEqual(refusal);
  });

  it('answers its question with the fallback when nobody can be asked (invoke), and finishes', async () => {
    const { run, sessionId } = await startRun('/ask who are you?\n/say done', 'invoke');
    await run.finished;

    const events = await recorded(sessionId);
    expect(typesOf(events)).toEqual(['SessionOpened', 'RunStarted', 'QuestionAsked', 'QuestionAnswered', 'RunFinished']);
    expect(events.find((event) => event.type === 'QuestionAnswered')).toMatchObject({ data: { by: 'fallback' } });
    expect(events.at(-1)).toMatchObject({ data: { finishReason: 'stop', error: null } });
  });

  it('replies to the intern ending it only once its end is recorded', async () => {
    const { run, sessionId, runId } = await startRun('/sleep 60000', 'chat', { streamId: randomUUID(), created: 1_800_000_000 });
    await expect(run.receive({ type: 'end', reason: 'intern_suspended', correlationId: 'c-3' })).resolves.toEqual({ ok: true });

    expect((await recorded(sessionId)).at(-1)).toMatchObject({ type: 'RunCancelled', data: { runId, reason: 'intern_suspended' } });
  });

  it('ends as owner_lost on shutdown, keeping the first reason of a run stopped twice', async () => {
    const { run, sessionId, runId } = await startRun('/sleep 60000', 'chat', { streamId: randomUUID(), created: 1_800_000_000 });
    await run.shutdown();
    await run.shutdown();

    expect((await recorded(sessionId)).at(-1)).toMatchObject({ type: 'RunCancelled', data: { runId, reason: 'owner_lost' } });
  });

  it('expires the question nobody answered in time, and ends the run for it', async () => {
    const { run, sessionId } = await startRun('/ask who are you?', 'chat', { streamId: randomUUID(), created: 1_800_000_000 }, { interactionDeadlineMs: 200 });
    const toolCallId = await askedQuestion(sessionId);
    await run.finished;

    const [expired, cancelled] = (await recorded(sessionId)).slice(-2);
    expect(expired).toMatchObject({ type: 'QuestionExpired', data: { toolCallId } });
    expect(cancelled).toMatchObject({ type: 'RunCancelled', data: { reason: 'interaction_deadline' } });
    await expect(run.receive(answer(toolCallId, accept('late')))).resolves.toMatchObject({ ok: false });
  });

  it('ends the run at its execution deadline', async () => {
    const { run, sessionId, runId } = await startRun('/sleep 60000', 'chat', { streamId: randomUUID(), created: 1_800_000_000 }, { executionDeadlineMs: 200 });
    await run.finished;

    expect((await recorded(sessionId)).at(-1)).toMatchObject({ type: 'RunCancelled', data: { runId, reason: 'execution_deadline' } });
  });
});
