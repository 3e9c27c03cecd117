import type { EntityManager } from 'typeorm';
import type { InlineProjection, StoredEvent } from '@interns/event-store';
import { sessionIdOfStream } from '@interns/runs-domain';
import type { SessionEvent } from '@interns/runs-domain';

/**
 * `runs.sessions` and `runs.runs`, projected in the append's transaction: who owns a session, and which
 * runs are going on which intern (the concurrent-run limit and ending an intern's runs read them).
 */
export const sessionReadModelProjection: InlineProjection = async (manager: EntityManager, stored: StoredEvent[]) => {
  for (const row of stored) {
    const event = { type: row.type, data: row.data } as SessionEvent;
    switch (event.type) {
      case 'SessionOpened':
        await manager.query(
          `INSERT INTO runs.sessions (id, intern_id, caller_id, origin, created_at) VALUES ($1, $2, $3, $4, $5)`,
          [event.data.sessionId, event.data.internId, event.data.callerId, event.data.origin, event.data.at],
        );
        break;
      case 'RunStarted':
        await manager.query(
          `INSERT INTO runs.runs (id, session_id, intern_id, owner_id, approval_mode, model, status, started_at)
           SELECT $1, s.id, s.intern_id, $3, $4, $5, 'active', $6 FROM runs.sessions s WHERE s.id = $2`,
          [event.data.runId, sessionIdOfStream(row.streamId), event.data.ownerId, event.data.approvalMode, event.data.model, event.data.at],
        );
        break;
      case 'UsageRecorded':
        await manager.query(
          `UPDATE runs.runs SET prompt_tokens = prompt_tokens + $2, completion_tokens = completion_tokens + $3 WHERE id = $1`,
          [event.data.runId, event.data.promptTokens, event.data.completionTokens],
        );
        break;
      case 'RunFinished':
        await manager.query(
          `UPDATE runs.runs SET status = 'finished', finish_reason = $2, ended_at = $3 WHERE id = $1`,
          [event.data.runId, event.data.finishReason, event.data.at],
        );
        break;
      case 'RunCancelled':
        await manager.query(
          `UPDATE runs.runs SET status = 'cancelled', finish_reason = $2, ended_at = $3 WHERE id = $1`,
          [event.data.runId, `cancelled:${event.data.reason}`, event.data.at],
        );
        break;
      default:
        break;
    }
  }
};
