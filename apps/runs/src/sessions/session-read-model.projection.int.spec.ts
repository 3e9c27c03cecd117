/**
 * The run read model (`runs.runs`, CONTRACT section 12) is a function of the session events: each way a run
 * goes shows as its resource says, replaying events changes nothing (the revision guard), and rebuilding the
 * tables from the stored events gives back the same rows.
 */
import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { type EventMetadata, EventTail, PostgresEventStore, StreamStates } from '@interns/event-store';
import type { Question } from '@interns/contracts';
import type { SessionCommand } from '@interns/runs-domain';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { rebuildSessionReadModel, sessionReadModelProjection } from './session-read-model.projection';
import { SessionStreams } from './session-streams';

const METADATA: EventMetadata = { correlation_id: 'c-1', causation_id: null, actor: 'member:alice' };
const question: Question = { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'reject_once'] };
const at = (second: number) => `2026-11-24T10:00:${String(second).padStart(2, '0')}.000Z`;
const EXPIRES_AT = '2026-11-24T10:05:00.000Z';

const ROWS = `SELECT id, session_id, intern_id, origin, caller_id, status, finish_reason, end_reason,
  open_question, usage_reported, prompt_tokens, completion_tokens, started_at, ended_at, revision
  FROM runs.runs ORDER BY started_at, id`;

describe('the run read model', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let streams: SessionStreams;
  const internId = randomUUID();
  const runs = { answered: randomUUID(), cancelled: randomUUID(), expired: randomUUID(), lost: randomUUID(), waiting: randomUUID(), failed: randomUUID() };

  const open = (sessionId: string, origin: 'chat' | 'invoke'): SessionCommand => ({
    type: 'OpenSession',
    sessionId,
    internId,
    callerId: 'member:alice',
    origin,
    at: at(0),
  });
  const start = (runId: string, second: number, origin: 'chat' | 'invoke' = 'chat'): SessionCommand => ({
    type: 'StartRun',
    runId,
    prompt: 'go',
    approvalMode: 'manual',
    model: 'local/scripted',
    ownerId: 'owner-1',
    origin,
    at: at(second),
  });
  const ask = (runId: string, toolCallId: string): SessionCommand => ({ type: 'AskQuestion', runId, toolCallId, question, expiresAt: EXPIRES_AT });
  const usage = (runId: string): SessionCommand => ({
    type: 'RecordProgress',
    runId,
    events: [{ type: 'UsageRecorded', data: { runId, promptTokens: 3, completionTokens: 4 } }],
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: 'runs', migrations: RUNS_MIGRATIONS, applicationName: 'read-model.int.spec', migrate: true });
    streams = new SessionStreams(new PostgresEventStore(dataSource, { schema: 'runs', projections: [sessionReadModelProjection] }));

    const chat = randomUUID();
    await streams.execute(chat, [open(chat, 'chat'), start(runs.answered, 1), usage(runs.answered), ask(runs.answered, 'call_1')], METADATA);
    await streams.execute(chat, [{ type: 'AnswerQuestion', toolCallId: 'call_1', raw: 'allow_once', by: 'caller' }], METADATA);
    await streams.execute(chat, [usage(runs.answered), { type: 'FinishRun', runId: runs.answered, error: null, at: at(2) }], METADATA);
    // A chat may go on in the same session; this run was started by invoke.
    await streams.execute(chat, [start(runs.cancelled, 3, 'invoke'), { type: 'CancelRun', runId: runs.cancelled, reason: 'caller_cancelled', at: at(4) }], METADATA);
    await streams.execute(chat, [start(runs.failed, 5), { type: 'FinishRun', runId: runs.failed, error: { reason: 'internal_error', message: 'boom' }, at: at(6) }], METADATA);

    const invoke = randomUUID();
    await streams.execute(invoke, [open(invoke, 'invoke'), start(runs.expired, 7, 'invoke'), ask(runs.expired, 'call_2')], METADATA);
    await streams.execute(invoke, [{ type: 'ExpireQuestion', toolCallId: 'call_2', at: at(8) }], METADATA);

    const lost = randomUUID();
    await streams.execute(lost, [open(lost, 'chat'), start(runs.lost, 9), { type: 'CancelRun', runId: runs.lost, reason: 'owner_lost', at: at(10) }], METADATA);

    const waiting = randomUUID();
    await streams.execute(waiting, [open(waiting, 'chat'), start(runs.waiting, 11), ask(runs.waiting, 'call_3')], METADATA);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  const statusOf = async (runId: string) => {
    const [row] = await dataSource.query(
      'SELECT origin, status, finish_reason, end_reason, open_question, usage_reported, prompt_tokens, ended_at FROM runs.runs WHERE id = $1',
      [runId],
    );
    return row;
  };

  it('shows each run as its resource says: status, finish, open question, usage, origin, end', async () => {
    expect(await statusOf(runs.answered)).toMatchObject({ origin: 'chat', status: 'completed', finish_reason: 'stop', open_question: null, usage_reported: true, prompt_tokens: 6 });
    expect(await statusOf(runs.cancelled)).toMatchObject({ origin: 'invoke', status: 'cancelled', finish_reason: 'stop', usage_reported: false });
    expect(await statusOf(runs.failed)).toMatchObject({ status: 'failed', finish_reason: 'error' });
    expect(await statusOf(runs.expired)).toMatchObject({ status: 'expired', finish_reason: 'error', open_question: null, ended_at: new Date(at(8)) });
    expect(await statusOf(runs.lost)).toMatchObject({ status: 'failed', finish_reason: 'error' });
    expect(await statusOf(runs.waiting)).toMatchObject({
      status: 'awaiting_input',
      finish_reason: 'tool_calls',
      open_question: { tool_call_id: 'call_3', arguments: question, expires_at: EXPIRES_AT },
      ended_at: null,
    });
  });

  it('records why each ended run ended (its RUN_ENDINGS row), nothing for a run still going', async () => {
    expect(await statusOf(runs.answered)).toMatchObject({ end_reason: 'stop' });
    expect(await statusOf(runs.cancelled)).toMatchObject({ end_reason: 'caller_cancelled' });
    expect(await statusOf(runs.failed)).toMatchObject({ end_reason: 'error' });
    expect(await statusOf(runs.expired)).toMatchObject({ end_reason: 'interaction_deadline' });
    expect(await statusOf(runs.lost)).toMatchObject({ end_reason: 'owner_lost' });
    expect(await statusOf(runs.waiting)).toMatchObject({ end_reason: null });
  });

  it('ignores events it has already projected (a replayed batch moves no row, usage is not counted twice)', async () => {
    const before = await dataSource.query(ROWS);
    await dataSource.transaction(async (manager) => {
      const events = await new EventTail(dataSource, 'runs').readSnapshotAfter(null, 1000, manager);
      await sessionReadModelProjection(manager, events);
    });
    expect(await dataSource.query(ROWS)).toEqual(before);
  });

  it('rebuilds the same rows from the stored events', async () => {
    const before = await dataSource.query(ROWS);
    expect(before).toHaveLength(Object.keys(runs).length);
    await dataSource.query('UPDATE runs.runs SET status = $1', ['running']);
    await rebuildSessionReadModel(dataSource);
    expect(await dataSource.query(ROWS)).toEqual(before);
  });

  it("takes the session's state from the appending decider: an append reads none of the session's earlier events", async () => {
    const reads = jest.spyOn(StreamStates.prototype, 'before');
    try {
      const session = randomUUID();
      const runId = randomUUID();
      await streams.execute(session, [open(session, 'chat'), start(runId, 12)], METADATA);
      await streams.execute(session, [usage(runId), { type: 'FinishRun', runId, error: null, at: at(13) }], METADATA);
      expect(reads).not.toHaveBeenCalled();
      const [row] = await dataSource.query('SELECT status, prompt_tokens FROM runs.runs WHERE id = $1', [runId]);
      expect(row).toEqual({ status: 'completed', prompt_tokens: 3 });
    } finally {
      reads.mockRestore();
    }
  });
});
