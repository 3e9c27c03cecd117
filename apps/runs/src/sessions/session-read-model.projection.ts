import type { DataSource, EntityManager } from 'typeorm';
import { assignments } from '@interns/database';
import { EventTail, type InlineProjection, type StoredEvent } from '@interns/event-store';
import { cancelledRunConclusion, finishedRunConclusion, sessionIdOfStream } from '@interns/runs-domain';
import type { RunConclusion, SessionEvent } from '@interns/runs-domain';

const REBUILD_BATCH = 500;

/**
 * `runs.sessions` and `runs.runs`, projected in the append's transaction: who owns a session, and every run as
 * its resource shows it (CONTRACT section 12: status, finish, open question, usage), which the run routes, the
 * concurrent-run limit and ending an intern's runs read. A run row changes only with an event of a later
 * session version than the last it took (`revision`), so replaying events (a rebuild, a repeated batch)
 * leaves it as it is.
 */
export const sessionReadModelProjection: InlineProjection = async (manager: EntityManager, stored: StoredEvent[]) => {
  for (const row of stored) await projectEvent(manager, row);
};

async function projectEvent(manager: EntityManager, row: StoredEvent): Promise<void> {
  const event = { type: row.type, data: row.data } as SessionEvent;
  const version = row.streamVersion;
  switch (event.type) {
    case 'SessionOpened':
      await manager.query(
        `INSERT INTO runs.sessions (id, intern_id, caller_id, origin, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`,
        [event.data.sessionId, event.data.internId, event.data.callerId, event.data.origin, event.data.at],
      );
      return;
    case 'RunStarted':
      await manager.query(
        `INSERT INTO runs.runs (id, session_id, intern_id, owner_id, approval_mode, model, status, started_at,
           origin, caller_id, run_status, revision)
         SELECT $1, s.id, s.intern_id, $3, $4, $5, 'active', $6, coalesce($7, s.origin), s.caller_id, 'running', $8
           FROM runs.sessions s WHERE s.id = $2
         ON CONFLICT (id) DO NOTHING`,
        [
          event.data.runId,
          sessionIdOfStream(row.streamId),
          event.data.ownerId,
          event.data.approvalMode,
          event.data.model,
          event.data.at,
          event.data.origin ?? null,
          version,
        ],
      );
      return;
    case 'QuestionAsked':
      await updateRun(manager, event.data.runId, version, {
        run_status: 'awaiting_input',
        run_finish_reason: 'tool_calls',
        open_question: { tool_call_id: event.data.toolCallId, arguments: event.data.question, expires_at: event.data.expiresAt },
      });
      return;
    case 'QuestionAnswered':
      await updateRun(manager, event.data.runId, version, { run_status: 'running', run_finish_reason: null, open_question: null });
      return;
    case 'QuestionExpired':
      await updateRun(manager, event.data.runId, version, { open_question: null });
      return;
    case 'UsageRecorded':
      await updateRun(manager, event.data.runId, version, {}, [
        `prompt_tokens = prompt_tokens + ${Number(event.data.promptTokens)}`,
        `completion_tokens = completion_tokens + ${Number(event.data.completionTokens)}`,
        'usage_reported = true',
      ]);
      return;
    case 'RunFinished':
      await endRun(manager, event.data.runId, version, event.data.at, 'finished', event.data.finishReason, finishedRunConclusion(event.data.finishReason));
      return;
    case 'RunCancelled':
      await endRun(
        manager,
        event.data.runId,
        version,
        event.data.at,
        'cancelled',
        `cancelled:${event.data.reason}`,
        cancelledRunConclusion(event.data.reason),
      );
      return;
    default:
      return;
  }
}

function endRun(
  manager: EntityManager,
  runId: string,
  version: number,
  at: string,
  status: 'finished' | 'cancelled',
  finishReason: string,
  conclusion: RunConclusion,
): Promise<void> {
  return updateRun(manager, runId, version, {
    status,
    finish_reason: finishReason,
    ended_at: at,
    run_status: conclusion.status,
    run_finish_reason: conclusion.finishReason,
    open_question: null,
  });
}

/** Column values bound as parameters (`open_question` as jsonb); `expressions` are built here from numbers only. */
async function updateRun(
  manager: EntityManager,
  runId: string,
  version: number,
  changes: Record<string, unknown>,
  expressions: string[] = [],
): Promise<void> {
  const { sets, values } = assignments(changes, ['open_question']);
  values.push(version, runId);
  const n = values.length;
  await manager.query(
    `UPDATE runs.runs SET ${[...expressions, ...sets, `revision = $${n - 1}`].join(', ')} WHERE id = $${n} AND revision < $${n - 1}`,
    values,
  );
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
    let batch = await tail.readSnapshotAfter(null, REBUILD_BATCH, manager);
    while (batch.length > 0) {
      for (const row of batch) await projectEvent(manager, row);
      const last = batch[batch.length - 1];
      batch = await tail.readSnapshotAfter({ transactionId: last.transactionId, position: last.globalPosition }, REBUILD_BATCH, manager);
    }
    await manager.query(
      `UPDATE runs.runs r SET transcript_purged_at = p.transcript_purged_at FROM purged_transcripts p WHERE p.id = r.id`,
    );
  });
}
