import type { EntityManager } from 'typeorm';
import { boundedText, callerParts, type Question, type Usage } from '@interns/contracts';
import {
  type IntegrationEventDraft,
  type IntegrationEventTranslator,
  type StoredEvent,
  type StreamStep,
  StreamStates,
} from '@interns/event-store';
import {
  runUsage,
  SESSION_FOLD,
  SESSION_STREAM_TYPE,
  type SessionEvent,
  type SessionOrigin,
  type SessionState,
} from '@interns/runs-domain';

/** Sessions whose latest state the relay keeps, so a run's many events are each folded once. */
const REMEMBERED_SESSIONS = 1_000;

/**
 * What a session event tells other services, with the session before and after it as the decider folds them
 * (its intern, origin and caller; a run's usage so far). Model turns, output, tool calls and answers are
 * nothing public. Runs does not know the intern's workspace, so `workspace_id` is null.
 */
export function sessionIntegrationEvents({ event, before, after }: StreamStep<SessionState>): IntegrationEventDraft[] {
  if (after.kind !== 'open') return [];
  const recorded = event as unknown as SessionEvent;
  const session = { intern_id: after.internId, session_id: after.sessionId };
  switch (recorded.type) {
    case 'RunStarted': {
      const { runId, model, approvalMode } = recorded.data;
      return [{
        type: 'run.started',
        workspace_id: null,
        data: { ...session, run_id: runId, origin: runOrigin(after, runId), ...callerParts(after.callerId), model, approval_mode: approvalMode },
      }];
    }
    case 'PromptJoined':
      return [{ type: 'run.prompt_joined', workspace_id: null, data: { ...session, run_id: recorded.data.runId } }];
    case 'QuestionAsked': {
      const { runId, toolCallId, question, expiresAt } = recorded.data;
      return [{
        type: 'question.opened',
        workspace_id: null,
        data: { ...session, run_id: runId, tool_call_id: toolCallId, arguments: boundedQuestion(question), expires_at: expiresAt },
      }];
    }
    case 'RunFinished': {
      const { runId, finishReason, error, usage } = recorded.data;
      const ending = { ...session, run_id: runId, origin: runOrigin(before, runId), usage };
      if (finishReason !== 'error') {
        return [{ type: 'run.completed', workspace_id: null, data: { ...ending, finish_reason: finishReason } }];
      }
      const why = error ? { reason: error.reason, message: boundedText(error.message) } : { reason: 'internal_error', message: 'the run failed' };
      return [{ type: 'run.failed', workspace_id: null, data: { ...ending, finish_reason: 'error', error: why } }];
    }
    case 'RunCancelled': {
      const { runId, reason } = recorded.data;
      const usage = runningUsage(before, runId);
      return [{
        type: 'run.cancelled',
        workspace_id: null,
        data: { ...session, run_id: runId, origin: runOrigin(before, runId), usage, reason },
      }];
    }
    default:
      return [];
  }
}

/** The question as a webhook shows it: its model-written text bounded, its options and fields as asked. */
function boundedQuestion(question: Question): Question {
  return question.kind === 'permission'
    ? { ...question, operation: boundedText(question.operation) }
    : { ...question, message: boundedText(question.message) };
}

/** The usage the run reported until it was cancelled (the decider forgets it with the run). */
function runningUsage(before: SessionState, runId: string): Usage | null {
  return before.kind === 'open' && before.activeRun?.runId === runId ? runUsage(before) : null;
}

/** Runs' translator for its IntegrationEventsRelay. */
export function sessionEventsTranslator(schema: string): IntegrationEventTranslator {
  const states = new StreamStates<SessionState>(schema, SESSION_FOLD, REMEMBERED_SESSIONS);
  return {
    async translate(event: StoredEvent, reader: EntityManager): Promise<IntegrationEventDraft[]> {
      if (event.streamType !== SESSION_STREAM_TYPE) return [];
      return sessionIntegrationEvents(await states.step(reader, event));
    },
  };
}

/** The origin of run `runId`, going in `state`: chat or invoke started it (a chat may go on in an invoke session). */
function runOrigin(state: SessionState, runId: string): SessionOrigin {
  if (state.kind !== 'open') throw new Error(`run ${runId} of a session that is not open`);
  return state.activeRun?.runId === runId ? state.activeRun.origin : state.origin;
}
