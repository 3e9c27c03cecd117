import type { DataSource, EntityManager } from 'typeorm';
import { assignments } from '@interns/database';
import { EventTail, type InlineProjection, type StoredEvent, StreamStates } from '@interns/event-store';
import { GOING_RUNS, SESSION_FOLD, SESSION_STREAM_TYPE, sessionIdOfStream } from '@interns/runs-domain';
import type { SessionEvent, SessionOpenState, SessionState } from '@interns/runs-domain';
import { RUNS_SCHEMA } from '../migrations';

const REBUILD_BATCH = 500;

/** Remembers nothing: the append this runs in may still roll back. */
const states = new StreamStates<SessionState>(RUNS_SCHEMA, SESSION_FOLD);

/**
 * `runs.sessions` and `runs.runs`, projected in the append's transaction: who owns a session, and every run as
 * its resource shows it (CONTRACT section 12: status, finish, open question, usage), which the run routes, the
 * concurrent-run limit and ending an intern's runs read. A run's row is the session decider's state after each
 * event (its going run, or the run it ended as RUN_ENDINGS shows it): the run's rules live in its `evolve`
 * only. A run row changes only with an event of a later session version than the last it took (`revision`),
 * so replaying events (a rebuild, a repeated batch) leaves it as it is.
 */
export const sessionReadModelProjection: InlineProjection = async (manager: EntityManager, stored: StoredEvent[], context = {}) => {
  let streamId: string | null = null;
  let state: SessionState = SESSION_FOLD.initialState();
  for (const row of stored) {
    if (row.streamType !== SESSION_STREAM_TYPE) continue;
    // A batch is one append's (one stream), whose decider handed its state over: no read of the session's
    // earlier events on the append's path. A replayed batch may hold many streams and comes without it.
    if (row.streamId !== streamId) {
      state = row === stored[0] && context.stateBefore !== undefined ? (context.stateBefore as SessionState) : await states.before(manager, row.streamId, row.streamVersion);
    }
    streamId = row.streamId;
    state = await projectEvent(manager, row, state);
  }
};

/** Projects `row` onto the session's state just before it; returns the state after it. */
async function projectEvent(manager: EntityManager, row: StoredEvent, before: SessionState): Promise<SessionState> {
  const { event: upcast, after } = states.apply(row, before);
  if (after.kind !== 'open') return after;
  const event = { type: upcast.type, data: upcast.data } as SessionEvent;
  const version = row.streamVersion;
  switch (event.type) {
    case 'SessionOpened':
      await manager.query(
        `INSERT INTO runs.sessions (id, intern_id, caller_id, origin, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`,
        [after.sessionId, after.internId, after.callerId, after.origin, event.data.at],
      );
      break;
    case 'RunStarted':
      await insertRun(manager, sessionIdOfStream(row.streamId), after, version);
      break;
    case 'QuestionAsked': {
      const { toolCallId, question, expiresAt } = event.data;
      const openQuestion = { tool_call_id: toolCallId, arguments: question, expires_at: expiresAt };
      await updateRun(manager, event.data.runId, version, { ...goingColumns(after, event.data.runId), open_question: openQuestion });
      break;
    }
    case 'QuestionAnswered':
    case 'QuestionExpired':
      await updateRun(manager, event.data.runId, version, { ...goingColumns(after, event.data.runId), open_question: null });
      break;
    case 'UsageRecorded':
      await updateRun(manager, event.data.runId, version, usageColumns(after, event.data.runId));
      break;
    case 'RunFinished':
    case 'RunCancelled':
      await updateRun(manager, event.data.runId, version, endedColumns(after, event.data.runId));
      break;
    default:
      break;
  }
  return after;
}

/** The run the session just started, as a new row. */
async function insertRun(manager: EntityManager, sessionId: string, session: SessionOpenState, version: number): Promise<void> {
  const run = session.activeRun;
  if (run === null) return;
  const { status, finishReason } = GOING_RUNS[run.status];
  await manager.query(
    `INSERT INTO runs.runs (id, session_id, intern_id, owner_id, approval_mode, model, status, finish_reason, started_at,
       origin, caller_id, revision)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (id) DO NOTHING`,
    [run.runId, sessionId, session.internId, run.ownerId, run.approvalMode, run.model, status, finishReason, run.startedAt, run.origin, session.callerId, version],
  );
}

/** The going run's status and finish (`awaiting_input` and `tool_calls` while it waits on a question). */
function goingColumns(session: SessionOpenState, runId: string): RowChanges {
  const run = session.activeRun;
  if (run === null || run.runId !== runId) return {};
  const { status, finishReason } = GOING_RUNS[run.status];
  return { status, finish_reason: finishReason };
}

function usageColumns(session: SessionOpenState, runId: string): RowChanges {
  const run = session.activeRun;
  if (run === null || run.runId !== runId) return {};
  return { prompt_tokens: run.promptTokens, completion_tokens: run.completionTokens, usage_reported: run.usageReported };
}

/** The run the session just ended, as its ending shows (RUN_ENDINGS); nobody can answer its question any more. */
function endedColumns(session: SessionOpenState, runId: string): RowChanges {
  const run = session.endedRun;
  if (run === null || run.runId !== runId) return {};
  return { status: run.status, finish_reason: run.finishReason, end_reason: run.reason, ended_at: run.endedAt, open_question: null };
}

type RowChanges = Record<string, unknown>;

/** Column values bound as parameters (`open_question` as jsonb); column names come from this file only. */
async function updateRun(manager: EntityManager, runId: string, version: number, changes: RowChanges): Promise<void> {
  const { sets, values } = assignments(changes, ['open_question']);
  values.push(version, runId);
  const n = values.length;
  await manager.query(`UPDATE runs.runs SET ${[...sets, `revision = $${n - 1}`].join(', ')} WHERE id = $${n} AND revision < $${n - 1}`, values);
}

/**
 * Projects every stored session event again into emptied tables, in commit order, in one transaction
 * (readers see the old rows until it commits; appends wait on the tables' lock and project on top of the
 * rebuilt rows). For an operator after a projection change, and to prove the read model is a function of
 * the events.
 */
export async function rebuildSessionReadModel(dataSource: DataSource): Promise<void> {
  const tail = new EventTail(dataSource, 'runs');
  // Repeatable read: every batch is read from the one snapshot the rebuild started with.
  await dataSource.transaction('REPEATABLE READ', async (manager) => {
    // When a run's transcript was purged is no fact of its events (their text is blanked in place): carried over.
    await manager.query(
      `CREATE TEMPORARY TABLE purged_transcripts ON COMMIT DROP AS
         SELECT id, transcript_purged_at FROM runs.runs WHERE transcript_purged_at IS NOT NULL`,
    );
    await manager.query('TRUNCATE runs.runs, runs.sessions');
    // Every session is folded from its first event on, in memory: one read of the events, not one per event.
    const sessions = new Map<string, SessionState>();
    let batch = await tail.readSnapshotAfter(null, REBUILD_BATCH, manager);
    while (batch.length > 0) {
      for (const row of batch) {
        if (row.streamType !== SESSION_STREAM_TYPE) continue;
        sessions.set(row.streamId, await projectEvent(manager, row, sessions.get(row.streamId) ?? SESSION_FOLD.initialState()));
      }
      const last = batch[batch.length - 1];
      batch = await tail.readSnapshotAfter({ transactionId: last.transactionId, position: last.globalPosition }, REBUILD_BATCH, manager);
    }
    await manager.query(
      `UPDATE runs.runs r SET transcript_purged_at = p.transcript_purged_at FROM purged_transcripts p WHERE p.id = r.id`,
    );
  });
}
