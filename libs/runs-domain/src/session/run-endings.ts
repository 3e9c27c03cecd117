import { ACTIVE_RUN_STATUSES } from '@interns/contracts';
import type { FinishReason, RunStatus } from '@interns/contracts';
import type { RunCancelReason, RunCancelled, RunFinished, RunFinishReason } from './session.events';

/**
 * Why a run ended: it ran to its end (its finish: `stop`, a cap's `length`, or an `error`), or it was stopped
 * early (a RunCancelled's reason). The key of RUN_ENDINGS, and `runs.runs.end_reason`.
 */
export type RunEndingReason = RunFinishReason | RunCancelReason;

/**
 * What the readers of a run's response (a live client, its chunk log) get last, before the final chunk:
 * - `finish`: the finish chunk of the run's own finish;
 * - `run_error`: an error chunk with the run's own error (its reason and message);
 * - `run_ended`: a `run_ended` error with the ending's message;
 * - `internal_error`: an `internal_error` error with the ending's message;
 * - `stop`: a `stop` finish;
 * - `nothing`: the live client left and is told nothing; the log's readers get a `stop` finish.
 */
export type RunTell = 'finish' | 'run_error' | 'run_ended' | 'internal_error' | 'stop' | 'nothing';

/** How one ending shows (CONTRACT section 12): the run's status, the finish its readers got, what they are told. */
export interface RunEndingRule {
  status: RunStatus;
  finishReason: FinishReason;
  tell: RunTell;
  /** The message of a `run_ended` or `internal_error` chunk; null where the run's own finish or error is told. */
  message: string | null;
}

/**
 * Every way a run ends, in one place: why a run is `failed` (or `cancelled`, `expired`, `completed`) is its
 * row here. A run that ran to its end is `completed` unless it failed; a caller (or a client that left)
 * cancelling it is `cancelled` with a `stop`; the intern ending it is `cancelled` with a `run_ended` error; an
 * unanswered question is `expired`; its execution deadline or the loss of the replica running it is `failed`.
 */
export const RUN_ENDINGS = {
  stop: { status: 'completed', finishReason: 'stop', tell: 'finish', message: null },
  length: { status: 'completed', finishReason: 'length', tell: 'finish', message: null },
  error: { status: 'failed', finishReason: 'error', tell: 'run_error', message: null },
  caller_cancelled: { status: 'cancelled', finishReason: 'stop', tell: 'stop', message: null },
  client_disconnected: { status: 'cancelled', finishReason: 'stop', tell: 'nothing', message: null },
  intern_suspended: { status: 'cancelled', finishReason: 'error', tell: 'run_ended', message: 'the intern was suspended; the run ended' },
  intern_deleted: { status: 'cancelled', finishReason: 'error', tell: 'run_ended', message: 'the intern is being deleted; the run ended' },
  interaction_deadline: {
    status: 'expired',
    finishReason: 'error',
    tell: 'run_ended',
    message: 'the question was not answered in time; the run ended',
  },
  execution_deadline: { status: 'failed', finishReason: 'error', tell: 'run_ended', message: 'the run reached its execution deadline' },
  owner_lost: { status: 'failed', finishReason: 'error', tell: 'internal_error', message: 'the runs service stopped; the run did not finish' },
} as const satisfies Record<RunEndingReason, RunEndingRule>;

/** The statuses of a run that may still produce chunks, be cancelled or be answered (`runs.runs.status`). */
export const GOING_RUN_STATUSES = ACTIVE_RUN_STATUSES;
export type GoingRunStatus = 'running' | 'awaiting_input';

/** How a going run shows: waiting on a question, its readers' last finish was `tool_calls`. */
export const GOING_RUNS = {
  running: { status: 'running', finishReason: null },
  awaiting_input: { status: 'awaiting_input', finishReason: 'tool_calls' },
} as const satisfies Record<GoingRunStatus, { status: RunStatus; finishReason: FinishReason | null }>;

/** The ending a RunFinished or RunCancelled records. */
export function endingReasonOf(event: RunFinished | RunCancelled): RunEndingReason {
  return event.type === 'RunFinished' ? event.data.finishReason : event.data.reason;
}
