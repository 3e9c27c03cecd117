import { Logger } from '@nestjs/common';
import { endingReasonOf, RUN_ENDINGS, type SessionEvent, type SessionState } from '@interns/runs-domain';

const logger = new Logger('Runs');

/** What a session write changed, as SessionStreams sees it. */
export interface SessionChange {
  events: SessionEvent[];
  previous: SessionState;
  state: SessionState;
}

/**
 * One `info` line per run that a committed session write ended (finished, cancelled, expired, failed), whoever
 * ended it (its owner, another replica ending an orphan, the intern's suspension): run id, intern, status, finish
 * reason, how long it ran, correlation id.
 */
export function logRunEnds(change: SessionChange, correlationId: string): void {
  for (const event of change.events) {
    if (event.type !== 'RunFinished' && event.type !== 'RunCancelled') continue;
    const { runId, at } = event.data;
    const conclusion = RUN_ENDINGS[endingReasonOf(event)];
    const reason = event.type === 'RunCancelled' ? event.data.reason : (event.data.error?.reason ?? null);
    const run = change.previous.kind === 'open' && change.previous.activeRun?.runId === runId ? change.previous.activeRun : null;
    const ms = run === null ? null : Math.max(0, Date.parse(at) - Date.parse(run.startedAt));
    const internId = change.state.kind === 'open' ? change.state.internId : null;
    const why = reason === null ? conclusion.finishReason : `${conclusion.finishReason}, ${reason}`;
    logger.log(`run ${runId} of intern ${internId ?? '?'} ${conclusion.status} (${why}) in ${ms === null ? '?' : `${ms}ms`}`, {
      run_id: runId,
      intern_id: internId,
      status: conclusion.status,
      finish_reason: conclusion.finishReason,
      reason,
      duration_ms: ms,
      correlation_id: correlationId,
    });
  }
}
