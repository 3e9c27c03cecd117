/**
 * Transcript retention (CONTRACT section 22) on real PostgreSQL and NATS: the sweep purges the transcripts of runs
 * that ended longer than TRANSCRIPT_RETENTION_MS ago (every text-bearing event field and the run's chunks) in
 * batches, leaves going and recent runs alone, keeps every run's metadata, and the session goes on afterwards; a
 * deleted intern's purge takes all of its runs and nobody else's, and may be repeated.
 */
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { type EventMetadata, PostgresEventStore } from '@interns/event-store';
import { type IntegrationEventType, subjectsFor, type Question } from '@interns/contracts';
import { ensureStream } from '@interns/messaging';
import { runTranscripts, type SessionCommand, type SessionEvent } from '@interns/runs-domain';
import { createTestDatabase, deleteTestStreams, TEST_STREAM_LIMITS, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { ensureRunChunkStream, RunChunkLog } from '../runs/run-chunk-log';
import { rebuildSessionReadModel, sessionReadModelProjection } from '../sessions/session-read-model.projection';
import { SessionStreams } from '../sessions/session-streams';
import { TRANSCRIPT_PURGE_BATCH, TranscriptPurger } from './transcript-purger';
import { TranscriptRetentionSweeper } from './transcript-retention.sweeper';

const METADATA: EventMetadata = { correlation_id: 'c-retention', causation_id: null, actor: 'member:alice' };
const RETENTION_MS = 1_500;
const RUN_METADATA = `SELECT id, session_id, intern_id, origin, caller_id, status, finish_reason, end_reason,
  usage_reported, prompt_tokens, completion_tokens, started_at, ended_at, revision FROM runs.runs ORDER BY started_at, id`;

const marker = () => `MARKER-${randomUUID()}`;
const now = () => new Date().toISOString();

async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('transcript retention', () => {
  const prefix = testNatsPrefix();
  const subjects = subjectsFor(prefix);
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let streams: SessionStreams;
  let purger: TranscriptPurger;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: 'runs', migrations: RUNS_MIGRATIONS, applicationName: 'retention.int.spec', migrate: true });
    streams = new SessionStreams(new PostgresEventStore(dataSource, { schema: 'runs', projections: [sessionReadModelProjection] }));
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    jsm = await jetstreamManager(nc);
    await ensureRunChunkStream(nc, subjects, { runReplayRetentionMs: 60_000, executionDeadlineMs: 60_000, jetstreamMaxBytes: 1024 ** 2, jetstreamReplicas: 1 });
    await ensureStream(nc, subjects.eventStreamName('runs'), [subjects.eventsOf('runs')], TEST_STREAM_LIMITS);
    purger = new TranscriptPurger(dataSource, nc, subjects);
  });

  afterAll(async () => {
    await nc?.close();
    await deleteTestStreams(prefix);
    await dataSource?.destroy();
    await db?.drop();
  });

  /** Rows of every table of the runs schema that hold `text` anywhere (each row cast to text). */
  async function rowsHolding(text: string): Promise<string[]> {
    const tables: { table_name: string }[] = await dataSource.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'runs' AND table_type = 'BASE TABLE'`,
    );
    const found: string[] = [];
    for (const { table_name: table } of tables) {
      const rows: { row: string }[] = await dataSource.query(`SELECT t::text AS row FROM runs."${table}" t WHERE strpos(t::text, $1) > 0`, [text]);
      found.push(...rows.map((row) => `runs.${table}: ${row.row}`));
    }
    return found;
  }

  async function chunksOf(runId: string): Promise<number> {
    const subject = subjects.runs.chunks(runId);
    const info = await jsm.streams.info(subjects.runChunkStreamName, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  }

  async function logChunks(runId: string, text: string): Promise<void> {
    const log = RunChunkLog.of(nc, subjects.runs.chunks(runId));
    log.append(JSON.stringify({ choices: [{ delta: { content: text } }] }));
    log.end();
    await log.flushed();
  }

  /** Publishes an integration event about `internId` quoting `text` (as the relay would); answers its sequence. */
  async function publishEvent(type: IntegrationEventType, internId: string, text: string): Promise<number> {
    const data = { intern_id: internId, run_id: randomUUID(), session_id: randomUUID(), quoted: text };
    const ack = await jetstream(nc).publish(subjects.integrationEvent(type), JSON.stringify({ id: randomUUID(), type, version: 1, data }));
    return ack.seq;
  }

  /** The sequences of the messages in the runs events stream; with `types`, of those types only. */
  async function storedEvents(types?: IntegrationEventType[]): Promise<number[]> {
    const stream = subjects.eventStreamName('runs');
    const wanted = types?.map((type) => subjects.integrationEvent(type));
    const { first_seq: first, last_seq: last } = (await jsm.streams.info(stream)).state;
    const sequences: number[] = [];
    for (let seq = first; seq <= last; seq += 1) {
      const message = await jsm.streams.getMessage(stream, { seq });
      if (message !== null && (wanted === undefined || wanted.includes(message.subject))) sequences.push(message.seq);
    }
    return sequences;
  }

  const open = (sessionId: string, internId: string): SessionCommand => ({
    type: 'OpenSession',
    sessionId,
    internId,
    callerId: 'member:alice',
    origin: 'chat',
    at: now(),
  });
  const start = (runId: string, prompt: string, at = now()): SessionCommand => ({
    type: 'StartRun',
    runId,
    prompt,
    approvalMode: 'manual',
    model: 'local/scripted',
    ownerId: 'owner-1',
    origin: 'chat',
    at,
  });

  /** A run whose every text-bearing event holds `text`: prompts, output, tool calls, both kinds of question and answer, a failure. */
  async function wordyRun(sessionId: string, internId: string, runId: string, text: string): Promise<void> {
    const permission: Question = { kind: 'permission', operation: `shell: echo ${text}`, options: ['allow_once', 'allow_always', 'reject_once'] };
    const elicitation: Question = { kind: 'elicitation', message: `tell me ${text}`, fields: [{ name: 'detail', type: 'string', required: true }] };
    await streams.execute(sessionId, [open(sessionId, internId), start(runId, `/shell echo ${text}`), { type: 'JoinPrompt', text: `also ${text}`, at: now() }], METADATA);
    await streams.execute(
      sessionId,
      [
        {
          type: 'RecordProgress',
          runId,
          events: [
            { type: 'ModelRequested', data: { runId, turn: 1, at: now() } },
            { type: 'OutputProduced', data: { runId, text: `said ${text}` } },
            { type: 'ToolCalled', data: { runId, toolCallId: 'call_1', tool: 'shell', arguments: JSON.stringify({ command: `echo ${text}` }), consent: 'self-drive' } },
            { type: 'ToolCompleted', data: { runId, toolCallId: 'call_1', result: `${text}\n` } },
            { type: 'ToolRefused', data: { runId, toolCallId: 'call_2', tool: 'shell', arguments: JSON.stringify({ command: `rm ${text}` }), result: `refused ${text}` } },
            { type: 'UsageRecorded', data: { runId, promptTokens: 3, completionTokens: 4 } },
          ],
        },
        { type: 'AskQuestion', runId, toolCallId: 'call_3', question: permission, expiresAt: now() },
      ],
      METADATA,
    );
    await streams.execute(sessionId, [{ type: 'AnswerQuestion', toolCallId: 'call_3', raw: 'allow_always', by: 'caller' }], METADATA);
    await streams.execute(sessionId, [{ type: 'AskQuestion', runId, toolCallId: 'call_4', question: elicitation, expiresAt: now() }], METADATA);
    await streams.execute(
      sessionId,
      [
        { type: 'AnswerQuestion', toolCallId: 'call_4', raw: JSON.stringify({ action: 'accept', content: { detail: text } }), by: 'caller' },
        { type: 'FinishRun', runId, error: { reason: 'internal_error', message: `failed on ${text}` }, at: now() },
      ],
      METADATA,
    );
    await logChunks(runId, text);
  }

  it('purges what ended longer ago than the retention, in batches, keeping metadata, going runs and the session', async () => {
    const internId = randomUUID();
    const ended = { sessionId: randomUUID(), runId: randomUUID(), text: marker() };
    await wordyRun(ended.sessionId, internId, ended.runId, ended.text);
    // More runs past the retention than one batch holds: a backlog the sweep works through batch after batch.
    const anHourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const backlog = Array.from({ length: TRANSCRIPT_PURGE_BATCH + 5 }, () => ({ sessionId: randomUUID(), runId: randomUUID(), text: marker() }));
    for (const run of backlog) {
      await streams.execute(
        run.sessionId,
        [open(run.sessionId, internId), start(run.runId, run.text, anHourAgo), { type: 'FinishRun', runId: run.runId, error: null, at: anHourAgo }],
        METADATA,
      );
    }
    const going = { sessionId: randomUUID(), runId: randomUUID(), text: marker() };
    await streams.execute(going.sessionId, [open(going.sessionId, internId), start(going.runId, going.text)], METADATA);
    await logChunks(going.runId, going.text);
    expect(await rowsHolding(ended.text)).not.toEqual([]);
    expect(await chunksOf(ended.runId)).toBe(2);
    const metadataBefore = await dataSource.query(RUN_METADATA);

    const batches: number[] = [];
    const countingPurger = new (class extends TranscriptPurger {
      override async purgeEndedBefore(retentionMs: number): Promise<number> {
        const purged = await super.purgeEndedBefore(retentionMs);
        if (purged > 0) batches.push(purged);
        return purged;
      }
    })(dataSource, nc, subjects);
    const sweeper = new TranscriptRetentionSweeper(countingPurger, dataSource, RETENTION_MS);
    sweeper.onApplicationBootstrap();
    try {
      const unpurged = async (): Promise<number> =>
        (await dataSource.query(`SELECT count(*)::int AS n FROM runs.runs WHERE ended_at IS NOT NULL AND transcript_purged_at IS NULL`))[0].n;
      await eventually(async () => (await unpurged()) === 0, 'every ended run is purged');
      expect(await rowsHolding(ended.text)).toEqual([]);
      expect(await chunksOf(ended.runId)).toBe(0);
      for (const run of backlog) expect(await rowsHolding(run.text)).toEqual([]);
      // The backlog went in bounded transactions: a full batch first, the rest after.
      expect(batches[0]).toBe(TRANSCRIPT_PURGE_BATCH);
      expect(Math.max(...batches)).toBe(TRANSCRIPT_PURGE_BATCH);
      expect(batches.reduce((sum, n) => sum + n, 0)).toBe(backlog.length + 1);
    } finally {
      await sweeper.onApplicationShutdown();
    }

    // The going run keeps its transcript and chunks; every run keeps its metadata.
    expect((await rowsHolding(going.text)).length).toBeGreaterThan(0);
    expect(await chunksOf(going.runId)).toBe(2);
    expect(await dataSource.query(RUN_METADATA)).toEqual(metadataBefore);

    // The purged events keep their shape: the session folds as before (a standing permission included).
    const { version, state } = await streams.load(ended.sessionId);
    expect(state).toMatchObject({ kind: 'open', runCount: 1, activeRun: null, standingShellPermission: 'allow' });
    const stored = await dataSource.query(`SELECT type, data FROM runs.events WHERE stream_id = $1 ORDER BY stream_version`, [`session-${ended.sessionId}`]);
    const [transcript] = runTranscripts(stored as SessionEvent[]);
    expect(transcript).toMatchObject({ runId: ended.runId, prompts: ['', ''], content: '', ending: 'error' });
    expect(transcript.questions.map(({ question }) => question)).toEqual([
      { kind: 'permission', operation: '', options: ['allow_once', 'allow_always', 'reject_once'] },
      { kind: 'elicitation', message: '', fields: [] },
    ]);

    // The session goes on: a new run, whose transcript is kept until its own retention.
    const next = { runId: randomUUID(), text: marker() };
    const write = await streams.execute(ended.sessionId, [start(next.runId, next.text)], METADATA);
    expect(write.version).toBe(version + 1);
    expect((await rowsHolding(next.text)).length).toBeGreaterThan(0);

    // When a transcript was purged survives a rebuild of the read model.
    const purgedAt = await dataSource.query(`SELECT id, transcript_purged_at FROM runs.runs ORDER BY id`);
    await rebuildSessionReadModel(dataSource);
    expect(await dataSource.query(`SELECT id, transcript_purged_at FROM runs.runs ORDER BY id`)).toEqual(purgedAt);
  });

  it("purges every run of a deleted intern, going or ended, and nobody else's; again changes nothing", async () => {
    const deleted = randomUUID();
    const other = randomUUID();
    const ended = { sessionId: randomUUID(), runId: randomUUID(), text: marker() };
    const going = { sessionId: randomUUID(), runId: randomUUID(), text: marker() };
    const kept = { sessionId: randomUUID(), runId: randomUUID(), text: marker() };
    await wordyRun(ended.sessionId, deleted, ended.runId, ended.text);
    await streams.execute(going.sessionId, [open(going.sessionId, deleted), start(going.runId, going.text)], METADATA);
    await logChunks(going.runId, going.text);
    await wordyRun(kept.sessionId, other, kept.runId, kept.text);
    const metadataBefore = await dataSource.query(RUN_METADATA);

    expect(await purger.purgeIntern(deleted)).toBe(2);

    for (const run of [ended, going]) {
      expect(await rowsHolding(run.text)).toEqual([]);
      expect(await chunksOf(run.runId)).toBe(0);
    }
    expect((await rowsHolding(kept.text)).length).toBeGreaterThan(0);
    expect(await chunksOf(kept.runId)).toBe(2);
    expect(await dataSource.query(RUN_METADATA)).toEqual(metadataBefore);
    const purged: { id: string }[] = await dataSource.query(`SELECT id FROM runs.runs WHERE transcript_purged_at IS NOT NULL AND intern_id = $1`, [deleted]);
    expect(purged.map((row) => row.id).sort()).toEqual([ended.runId, going.runId].sort());

    // A teardown step asked again (a lost answer, a crash) purges nothing more and fails nothing.
    expect(await purger.purgeIntern(deleted)).toBe(0);
  });

  it("deletes the questions and failures published about a deleted intern, and nothing else of the runs events stream", async () => {
    const deleted = randomUUID();
    const other = randomUUID();
    const text = marker();
    const doomed = [await publishEvent('question.opened', deleted, text), await publishEvent('run.failed', deleted, text)];
    const kept = [
      await publishEvent('run.started', deleted, text),
      await publishEvent('question.opened', other, text),
      await publishEvent('run.failed', other, text),
    ];
    const before = await storedEvents();
    expect(before).toEqual(expect.arrayContaining([...doomed, ...kept]));

    await purger.purgeIntern(deleted);
    expect(await storedEvents()).toEqual(before.filter((seq) => !doomed.includes(seq)));
  });

  it("ends a deleted intern's scan of the runs events stream when its budget is spent, so the teardown never waits on a long stream", async () => {
    const deleted = randomUUID();
    const text = marker();
    const left = await publishEvent('question.opened', deleted, text);
    const hasted = new TranscriptPurger(dataSource, nc, subjects, -1);
    await hasted.purgeIntern(deleted);
    expect(await storedEvents()).toContain(left);
    await purger.purgeIntern(deleted);
    expect(await storedEvents()).not.toContain(left);
  });

  it('deletes the questions and failures published longer ago than the retention, and keeps younger ones', async () => {
    const internId = randomUUID();
    await publishEvent('question.opened', internId, marker());
    await publishEvent('run.failed', internId, marker());
    await publishEvent('run.started', internId, marker());
    // Every question and failure stored so far (earlier tests' too) is past the retention after the wait.
    const old = await storedEvents(['question.opened', 'run.failed']);
    await new Promise((resolve) => setTimeout(resolve, RETENTION_MS + 200));
    await publishEvent('question.opened', internId, marker());
    await publishEvent('run.failed', internId, marker());
    const before = await storedEvents();

    expect(await purger.purgeIntegrationEventsBefore(RETENTION_MS)).toBe(old.length);
    expect(await storedEvents()).toEqual(before.filter((seq) => !old.includes(seq)));
  });
});
