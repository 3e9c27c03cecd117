import type { DataSource, EntityManager } from 'typeorm';
import { EventTail, type InlineProjection, type PendingEvent, type StoredEvent, StreamStates } from '@interns/event-store';
import { GOING_RUNS, SESSION_FOLD, SESSION_STREAM_TYPE, sessionIdOfStream } from '@interns/runs-domain';
import type { SessionEvent, SessionOpenState, SessionState } from '@interns/runs-domain';
import { RUNS_SCHEMA } from '../migrations';

const REBUILD_BATCH = 500;

/** Remembers nothing: the append this runs in may still roll back. */
const states = new StreamStates<SessionState>(RUNS_SCHEMA, SESSION_FOLD);

/**
 * One write of the read model, as data: `runs.apply_session_rows` (migration SessionAppends) applies a list of them,
 * after an append (this projection) or inside the append's own statement (`runs.append_session`, SessionStreams).
 * The rules of what to write stay here; the SQL only writes.
 */
export type SessionRowWrite =
  | { op: 'session'; id: string; intern_id: string; caller_id: string; origin: string; created_at: string }
  | {
      op: 'run';
      id: string;
      session_id: string;
      intern_id: string;
      owner_id: string;
      approval_mode: string;
      model: string;
      status: string;
      finish_reason: string | null;
      started_at: string;
      origin: string;
      caller_id: string;
      revision: number;
    }
  /** The columns `set` names, on the run, when its `revision` is older than this one. */
  | { op: 'update'; id: string; revision: number; set: RowChanges };

/**
 * `runs.sessions` and `runs.runs`, projected in the append's transaction: who owns a session, and every run as
 * its resource shows it (CONTRACT section 12: status, finish, open question, usage), which the run routes, the
 * concurrent-run limit and ending an intern's runs read. A run's row is the session decider's state after each
 * event (its going run, or the run it ended as RUN_ENDINGS shows it): the run's rules live in its `evolve`
 * only. A run row changes only with an event of a later session version than the last it took (`revision`),
 * so replaying events (a rebuild, a repeated batch) leaves it as it is.
 */
export const sessionReadModelProjection: InlineProjection = async (manager: EntityManager, stored: StoredEvent[], context = {}) => {
  const writes: SessionRowWrite[] = [];
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
    state = projectEvent(row, state, writes);
  }
  await applySessionRows(manager, writes);
};

/** The writes one append's events (of one session, which was `before` just before them) make to the read model. */
export function sessionRowWrites(events: PendingEvent[], before: SessionState): SessionRowWrite[] {
  const writes: SessionRowWrite[] = [];
  events.reduce((state, event) => projectEvent(event, state, writes), before);
  return writes;
}

export async function applySessionRows(manager: EntityManager, writes: SessionRowWrite[]): Promise<void> {
  if (writes.length > 0) await manager.query('SELECT runs.apply_session_rows($1::jsonb)', [JSON.stringify(writes)]);
}

/** Adds the writes `row` makes, on the session's state just before it, to `writes`; returns the state after it. */
function projectEvent(row: PendingEvent, before: SessionState, writes: SessionRowWrite[]): SessionState {
  // Upcasting reads the type, schema version and data only: an event not stored yet has no position to give.
  const { event: upcast, after } = states.apply(row as StoredEvent, before);
  if (after.kind !== 'open') return after;
  const event = { type: upcast.type, data: upcast.data } as SessionEvent;
  const version = row.streamVersion;
  const update = (runId: string, set: RowChanges) => writes.push({ op: 'update', id: runId, revision: version, set: definedOrNull(set) });
  switch (event.type) {
    case 'SessionOpened':
      writes.push({ op: 'session', id: after.sessionId, intern_id: after.internId, caller_id: after.callerId, origin: after.origin, created_at: event.data.at });
      break;
    case 'RunStarted': {
      const run = insertedRun(sessionIdOfStream(row.streamId), after, version);
      if (run !== null) writes.push(run);
      break;
    }
    case 'QuestionAsked': {
      const { toolCallId, question, expiresAt } = event.data;
      const openQuestion = { tool_call_id: toolCallId, arguments: question, expires_at: expiresAt };
      update(event.data.runId, { ...goingColumns(after, event.data.runId), open_question: openQuestion });
      break;
    }
    case 'QuestionAnswered':
    case 'QuestionExpired':
      update(event.data.runId, { ...goingColumns(after, event.data.runId), open_question: null });
      break;
    case 'UsageRecorded':
      update(event.data.runId, usageColumns(after, event.data.runId));
      break;
    case 'RunFinished':
    case 'RunCancelled':
      update(event.data.runId, endedColumns(after, event.data.runId));
      break;
    default:
      break;
  }
  return after;
}

/** The run the session just started, as a new row. */
function insertedRun(sessionId: string, session: SessionOpenState, version: number): SessionRowWrite | null {
  const run = session.activeRun;
  if (run === null) return null;
  const { status, finishReason } = GOING_RUNS[run.status];
  return {
    op: 'run',
    id: run.runId,
    session_id: sessionId,
    intern_id: session.internId,
    owner_id: run.ownerId,
    approval_mode: run.approvalMode,
    model: run.model,
    status,
    finish_reason: finishReason,
    started_at: run.startedAt,
    origin: run.origin,
    caller_id: session.callerId,
    revision: version,
  };
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

/** A column set to undefined is set to null, as a bound parameter would be (JSON would drop the key). */
function definedOrNull(changes: RowChanges): RowChanges {
  return Object.fromEntries(Object.entries(changes).map(([column, value]) => [column, value ?? null]));
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
      const writes: SessionRowWrite[] = [];
      for (const row of batch) {
        if (row.streamType !== SESSION_STREAM_TYPE) continue;
        sessions.set(row.streamId, projectEvent(row, sessions.get(row.streamId) ?? SESSION_FOLD.initialState(), writes));
      }
      await applySessionRows(manager, writes);
      const last = batch[batch.length - 1];
      batch = await tail.readSnapshotAfter({ transactionId: last.transactionId, position: last.globalPosition }, REBUILD_BATCH, manager);
    }
    await manager.query(
      `UPDATE runs.runs r SET transcript_purged_at = p.transcript_purged_at FROM purged_transcripts p WHERE p.id = r.id`,
    );
  });
}
