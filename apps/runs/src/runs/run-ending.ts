import { errorEnvelope } from '@interns/contracts';
import type { ChatChunk, ChunkBuilder, ErrorReason, RunEndReason } from '@interns/contracts';
import type { RunCancelReason, SessionCommand } from '@interns/runs-domain';

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

/**
 * The finish (or error) chunk an attached client gets before the final chunk; null when the client is gone
 * and the stream is only closed.
 */
export function endingChunk(chunks: ChunkBuilder, ending: Ending | null, outcome: Outcome): ChatChunk | null {
  if (ending === null) {
    return outcome.finish === 'error' ? chunks.error(errorEnvelope(outcome.reason, outcome.message).error) : chunks.finish(outcome.finish);
  }
  switch (ending.tell) {
    case 'run_ended':
      return chunks.error(errorEnvelope('run_ended', endedMessage(ending.reason)).error);
    case 'internal_error':
      return chunks.error(errorEnvelope('internal_error', 'the runs service stopped; the run did not finish').error);
    case 'stop':
      return chunks.finish('stop');
    case 'nothing':
      return null;
    default: {
      const unknown: never = ending;
      throw new Error(`unknown ending ${JSON.stringify(unknown)}`);
    }
  }
}

function endedMessage(reason: RunCancelReason): string {
  switch (reason) {
    case 'intern_suspended':
      return 'the intern was suspended; the run ended';
    case 'intern_deleted':
      return 'the intern is being deleted; the run ended';
    case 'execution_deadline':
      return 'the run reached its execution deadline';
    case 'interaction_deadline':
      return 'the question was not answered in time; the run ended';
    default:
      return 'the run ended';
  }
}
