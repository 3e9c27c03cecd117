import type { EntityManager } from 'typeorm';
import { EventData, IntegrationEvent } from '../integration-events/integration-event';

/** Session streams are `session-<session id>` (runs service). */
const SESSION_STREAM_PREFIX = 'session-';

export function sessionIdOfStream(streamId: string): string {
  return streamId.startsWith(SESSION_STREAM_PREFIX) ? streamId.slice(SESSION_STREAM_PREFIX.length) : streamId;
}

/** Who a session's caller is: `member:<id>` (user keys, OAuth) or `key:<id>` (organization and intern keys). */
export function callerParts(callerId: string): { userId: string | null; apiKeyId: string | null } {
  if (callerId.startsWith('member:')) return { userId: callerId.slice('member:'.length), apiKeyId: null };
  if (callerId.startsWith('key:')) return { userId: null, apiKeyId: callerId.slice('key:'.length) };
  return { userId: null, apiKeyId: null };
}

/**
 * The run's row, created on the first event of the run that arrives (whichever it is) with what is known of
 * its session and intern so far; later arrivals of the session or intern fill the rest (see below).
 */
async function ensureRun(manager: EntityManager, runId: string, sessionId: string): Promise<void> {
  await manager.query(
    `INSERT INTO analytics.run_facts
            (run_id, session_id, intern_id, caller_id, user_id, api_key_id, origin, workspace_id, organization_id)
     SELECT $1, x.session_id, s.intern_id, s.caller_id, s.user_id, s.api_key_id, s.origin, i.workspace_id, i.organization_id
       FROM (SELECT $2::text AS session_id) x
       LEFT JOIN analytics.session_facts s ON s.session_id = x.session_id
       LEFT JOIN analytics.intern_facts i ON i.intern_id = s.intern_id
     ON CONFLICT (run_id) DO NOTHING`,
    [runId, sessionId],
  );
}

async function updateRun(manager: EntityManager, runId: string, sessionId: string, set: string, values: unknown[]): Promise<void> {
  await ensureRun(manager, runId, sessionId);
  await manager.query(`UPDATE analytics.run_facts SET ${set} WHERE run_id = $1`, [runId, ...values]);
}

async function sessionOpened(manager: EntityManager, event: IntegrationEvent, data: EventData): Promise<void> {
  const sessionId = sessionIdOfStream(event.stream_id);
  const callerId = data.string('callerId');
  const { userId, apiKeyId } = callerParts(callerId);
  await manager.query(
    `INSERT INTO analytics.session_facts (session_id, intern_id, caller_id, user_id, api_key_id, origin, opened_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (session_id) DO NOTHING`,
    [sessionId, data.string('internId'), callerId, userId, apiKeyId, data.string('origin'), data.at()],
  );
  // Runs whose events came in before their session's.
  await manager.query(
    `UPDATE analytics.run_facts r
        SET intern_id = s.intern_id, caller_id = s.caller_id, user_id = s.user_id, api_key_id = s.api_key_id,
            origin = s.origin, workspace_id = i.workspace_id, organization_id = i.organization_id
       FROM analytics.session_facts s
       LEFT JOIN analytics.intern_facts i ON i.intern_id = s.intern_id
      WHERE s.session_id = $1 AND r.session_id = s.session_id`,
    [sessionId],
  );
}

/**
 * Applies one runs event (stream type `session`) to `session_facts` and `run_facts`. Each column is written
 * by one kind of event only (or summed, for usage), so the order of arrival does not matter.
 * Tokens come from UsageRecorded alone: a RunFinished's `usage` is their sum, and cancelled runs have none.
 */
export async function applyRunsEvent(manager: EntityManager, event: IntegrationEvent): Promise<void> {
  const data = new EventData(event);
  const sessionId = sessionIdOfStream(event.stream_id);
  switch (event.type) {
    case 'SessionOpened':
      return sessionOpened(manager, event, data);
    case 'RunStarted':
      return updateRun(
        manager,
        data.string('runId'),
        sessionId,
        'model = $2, approval_mode = $3, started_at = $4, prompt_count = prompt_count + 1',
        [data.string('model'), data.nullableString('approvalMode'), data.at()],
      );
    case 'PromptJoined':
      return updateRun(manager, data.string('runId'), sessionId, 'prompt_count = prompt_count + 1', []);
    case 'UsageRecorded':
      return updateRun(
        manager,
        data.string('runId'),
        sessionId,
        'prompt_tokens = COALESCE(prompt_tokens, 0) + $2, completion_tokens = COALESCE(completion_tokens, 0) + $3',
        [data.integer('promptTokens'), data.integer('completionTokens')],
      );
    case 'RunFinished': {
      const error = data.nullableRecord('error');
      return updateRun(manager, data.string('runId'), sessionId, 'finish_reason = $2, error_reason = $3, ended_at = $4', [
        data.string('finishReason'),
        error === null ? null : error.nullableString('reason'),
        data.at(),
      ]);
    }
    case 'RunCancelled':
      return updateRun(manager, data.string('runId'), sessionId, "finish_reason = 'cancelled', cancel_reason = $2, ended_at = $3", [
        data.nullableString('reason'),
        data.at(),
      ]);
    default:
      // Model turns, tool calls, questions: nothing analytics counts (yet). Recorded as processed all the same.
      return;
  }
}
