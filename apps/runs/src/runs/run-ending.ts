import type { ErrorReason } from '@interns/contracts';
import type { RUN_ENDINGS, RunCancelReason, SessionCommand } from '@interns/runs-domain';

/**
 * A run that stops early, and how its readers are told: `tell` is its RUN_ENDINGS row's (the type holds the two
 * together); the interaction deadline names the open question `toolCallId` that was not answered in time.
 */
export type Ending = {
  [R in RunCancelReason]: { reason: R; tell: (typeof RUN_ENDINGS)[R]['tell'] } & (R extends 'interaction_deadline' ? { toolCallId: string } : unknown);
}[RunCancelReason];

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
