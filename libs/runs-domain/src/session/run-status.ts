import type { FinishReason, RunStatus } from '@interns/contracts';
import type { RunCancelReason, RunFinished } from './session.events';

/** How a run ended, as its resource shows it (CONTRACT section 12): its status and the finish its readers got. */
export interface RunConclusion {
  status: RunStatus;
  finishReason: FinishReason;
}

/** A run that ran to its end: `completed` (stop, or a cap: length), else `failed`. */
export function finishedRunConclusion(finishReason: RunFinished['data']['finishReason']): RunConclusion {
  return finishReason === 'error' ? { status: 'failed', finishReason: 'error' } : { status: 'completed', finishReason };
}

/**
 * A run stopped before its end. Its caller (or a client that left) cancelled it: `cancelled`, and readers got
 * a `stop`; the intern ended it: `cancelled` with a `run_ended` error; its question was not answered in time:
 * `expired`; its deadline passed or the replica running it died: `failed`.
 */
export function cancelledRunConclusion(reason: RunCancelReason): RunConclusion {
  switch (reason) {
    case 'caller_cancelled':
    case 'client_disconnected':
      return { status: 'cancelled', finishReason: 'stop' };
    case 'intern_suspended':
    case 'intern_deleted':
      return { status: 'cancelled', finishReason: 'error' };
    case 'interaction_deadline':
      return { status: 'expired', finishReason: 'error' };
    case 'execution_deadline':
    case 'owner_lost':
      return { status: 'failed', finishReason: 'error' };
    default: {
      const unknown: never = reason;
      throw new Error(`unknown cancel reason ${JSON.stringify(unknown)}`);
    }
  }
}
