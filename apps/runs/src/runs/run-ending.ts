import type { ErrorReason, RunEndReason } from '@interns/contracts';
import type { SessionCommand } from '@interns/runs-domain';

/** How a run that stops early tells an attached client. */
export type Ending =
  /** The open question `toolCallId` was not answered within INTERACTION_DEADLINE_MS. */
  | { reason: 'interaction_deadline'; tell: 'run_ended'; toolCallId: string }
  | { reason: Exclude<RunEndReason, 'interaction_deadline'>; tell: 'run_ended' }
  | { reason: 'client_disconnected'; tell: 'nothing' }
  | { reason: 'caller_cancelled'; tell: 'stop' }
  | { reason: 'owner_lost'; tell: 'internal_error' };

/** How a run that was not stopped early ends: the model was done, the run reached a cap, or it failed. */
export type Outcome = { finish: 'stop' } | { finish: 'length' } | { finish: 'error'; reason: ErrorReason; message: string };

/** What the session records when the run ends: stopped early (`ending`), else its outcome. */
export function endingCommand(runId: string, ending: Ending | null, outcome: Outcome, at: string): SessionCommand {
  if (ending !== null) {
    return ending.reason === 'interaction_deadline'
      ? { type: 'ExpireQuestion', toolCallId: ending.toolCallId, at }
      : { type: 'CancelRun', runId, reason: ending.reason, at };
  }
  switch (outcome.finish) {
    case 'stop':
      return { type: 'FinishRun', runId, error: null, at };
    case 'length':
      return { type: 'FinishRunAtLimit', runId, at };
    case 'error':
      return { type: 'FinishRun', runId, error: { reason: outcome.reason, message: outcome.message }, at };
    default: {
      const unknown: never = outcome;
      throw new Error(`unknown outcome ${JSON.stringify(unknown)}`);
    }
  }
}
