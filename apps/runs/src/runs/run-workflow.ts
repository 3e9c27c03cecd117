import { sessionRefusal } from '@interns/contracts';
import type { ErrorReason, ParsedAnswer, Question, ServiceErrorPayload, SessionMessage, SessionMessageReply, Usage } from '@interns/contracts';
import type { SessionCommand, SessionOrigin } from '@interns/runs-domain';
import { endingCommand } from './run-ending';
import type { Ending, Outcome } from './run-ending';
import type { LiveStream } from './run-spec';

/**
 * A going run's workflow, pure: what the run does (its effects) on each thing that happens to it (its inputs),
 * given what it did so far (its state). LiveRun interprets it: it feeds the inputs, runs the effects (the record,
 * the responses, the loop, the timers) and evolves the state by each effect as it runs it, so an input arriving
 * while an earlier one awaits its record sees what was done, not what is still to come.
 */

export interface RunWorkflowState {
  runId: string;
  origin: SessionOrigin;
  /** Why the run was stopped early; null while nobody stopped it. */
  ending: Ending | null;
  /** The response being written now; `streamId` is its live client's, null once none reads it. Null while a question waits. */
  response: { streamId: string | null } | null;
  /** The tool call id of the question the loop waits on. */
  question: string | null;
  /** What the run's end was recorded with, once the loop is over. */
  concluded: { ending: Ending | null; outcome: Outcome } | null;
}

/** Why the loop threw, as the workflow tells it apart: the model provider's own error, or anything else. */
export type LoopFailure = { kind: 'model'; reason: ErrorReason; message: string } | { kind: 'unexpected'; detail: string };

export type RunInput =
  | { type: 'started'; stream: LiveStream | null }
  /** A message on the session channel; `at` is when it arrived. */
  | { type: 'message'; message: SessionMessage; at: string }
  /** The session recorded the caller's answer: `answer` is what it recorded (null: none), `waitingOn` the question waited on when it came. */
  | { type: 'answer_recorded'; toolCallId: string; stream: LiveStream | null; answer: ParsedAnswer | null; waitingOn: string | null }
  /** The session refused the caller's answer. */
  | { type: 'answer_refused'; refusal: ServiceErrorPayload }
  | { type: 'execution_deadline' }
  | { type: 'interaction_deadline'; toolCallId: string }
  /** The loop asks the caller; `expiresAt` is when the interaction deadline passes. */
  | { type: 'loop_asked'; toolCallId: string; question: Question; expiresAt: string }
  | { type: 'question_recorded'; toolCallId: string; question: Question }
  /** The caller's answer (shell consent, elicitation) cancels the run. */
  | { type: 'loop_cancelled_by_answer' }
  | { type: 'loop_finished'; finish: 'stop' | 'length'; at: string }
  | { type: 'loop_failed'; failure: LoopFailure; at: string }
  /** The run's end is recorded; `usage` is the run's whole, as it stood before. */
  | { type: 'ending_recorded'; usage: Usage | null }
  | { type: 'ending_not_recorded'; detail: string }
  /** This replica is going away. */
  | { type: 'shutdown' };

export type RunEffect =
  | { type: 'count_active_run' }
  | { type: 'arm_execution_deadline' }
  | { type: 'disarm_execution_deadline' }
  /** The run is no longer active; `ending` labels its duration. */
  | { type: 'measure_run'; ending: string }
  | { type: 'attach_response'; stream: LiveStream | null }
  | { type: 'detach_response' }
  | { type: 'abandon_response' }
  | { type: 'end_response_with_question'; toolCallId: string; question: Question }
  | { type: 'end_response_with_run'; ending: Ending | null; outcome: Outcome; usage: Usage | null }
  /** Records `command` alone. */
  | { type: 'record'; command: SessionCommand; correlationId: string }
  /** Records the caller's answer; the interpreter reports back `answer_recorded` (or `answer_refused`). */
  | { type: 'record_answer'; toolCallId: string; raw: string; stream: LiveStream | null; correlationId: string; waitingOn: string | null }
  /** Records the question with the output streamed so far; the interpreter reports back `question_recorded`. */
  | { type: 'record_question'; command: SessionCommand; toolCallId: string; question: Question }
  /** Records the intern's fallback answer and hands it to the loop (no caller to ask). */
  | { type: 'answer_with_fallback'; toolCallId: string }
  /**
   * Records the run's end with the output streamed so far; the interpreter reports back `ending_recorded`, or
   * `ending_not_recorded` when the record or the response's end failed.
   */
  | { type: 'record_ending'; command: SessionCommand; ending: Ending | null; outcome: Outcome }
  | { type: 'queue_steering'; text: string }
  /** Aborts the loop: a model turn or a shell command going on ends with it. */
  | { type: 'stop_loop'; ending: Ending }
  /** The loop waits for the caller's answer to `toolCallId`, until the interaction deadline. */
  | { type: 'await_answer'; toolCallId: string }
  | { type: 'settle_question'; toolCallId: string; answer: ParsedAnswer }
  /** Whatever waits on a question gets no answer (the loop then stops). */
  | { type: 'give_up_question' }
  /** The loop gets no answer to the question it just asked: the run was stopped while it was recorded. */
  | { type: 'withhold_answer' }
  | { type: 'log_error'; message: string }
  /** The run's chunk log is complete before its session subject goes: a reader never waits on a run nobody owns. */
  | { type: 'flush_log' }
  /** Waits until the run has ended and its ending is recorded. */
  | { type: 'await_finished' }
  | { type: 'reply'; reply: SessionMessageReply };

export function initialRunState(run: { runId: string; origin: SessionOrigin }): RunWorkflowState {
  return { runId: run.runId, origin: run.origin, ending: null, response: null, question: null, concluded: null };
}

const OK: SessionMessageReply = { ok: true };

/** What the run does on `input`. */
export function decide(input: RunInput, state: RunWorkflowState): RunEffect[] {
  switch (input.type) {
    case 'started':
      return [{ type: 'count_active_run' }, { type: 'attach_response', stream: input.stream }, { type: 'arm_execution_deadline' }];
    case 'message':
      return decideMessage(input.message, input.at, state);
    case 'answer_recorded':
      if (input.waitingOn !== input.toolCallId || input.answer === null) {
        return [reply(sessionRefusal('interaction_not_pending', 'the question is no longer pending'))];
      }
      // The answer's response is there before the loop goes on with the answer.
      return [
        { type: 'attach_response', stream: input.stream },
        { type: 'settle_question', toolCallId: input.toolCallId, answer: input.answer },
        reply(OK),
      ];
    case 'answer_refused':
      return [reply({ ok: false, ...input.refusal })];
    case 'execution_deadline':
      return stop(state, { reason: 'execution_deadline', tell: 'run_ended' });
    case 'interaction_deadline':
      if (state.question !== input.toolCallId) return [];
      return stop(state, { reason: 'interaction_deadline', tell: 'run_ended', toolCallId: input.toolCallId });
    case 'loop_asked': {
      const { toolCallId, question, expiresAt } = input;
      return [{ type: 'record_question', command: { type: 'AskQuestion', runId: state.runId, toolCallId, question, expiresAt }, toolCallId, question }];
    }
    case 'question_recorded':
      // Without a client (invoke, or a response already ended) the intern's fallback answers at once.
      if (state.origin === 'invoke' || state.response === null) return [{ type: 'answer_with_fallback', toolCallId: input.toolCallId }];
      if (state.ending !== null) return [{ type: 'withhold_answer' }];
      return [
        { type: 'end_response_with_question', toolCallId: input.toolCallId, question: input.question },
        { type: 'await_answer', toolCallId: input.toolCallId },
      ];
    case 'loop_cancelled_by_answer':
      return stop(state, { reason: 'caller_cancelled', tell: 'stop' });
    case 'loop_finished':
      return conclude(state, { finish: input.finish }, [], input.at);
    case 'loop_failed':
      return decideFailure(state, input.failure, input.at);
    case 'ending_recorded': {
      const concluded = state.concluded;
      if (concluded === null) return [];
      // Stopped while it waited on an answer: the ending gets a response of its own.
      const attach: RunEffect[] = state.response === null ? [{ type: 'attach_response', stream: null }] : [];
      return [...attach, { type: 'end_response_with_run', ...concluded, usage: input.usage }];
    }
    case 'ending_not_recorded':
      return [
        { type: 'log_error', message: `run ${state.runId} could not record its end: ${input.detail}` },
        { type: 'abandon_response' },
      ];
    case 'shutdown':
      // An attached client learns it as a retryable error.
      return [...stop(state, { reason: 'owner_lost', tell: 'internal_error' }), { type: 'await_finished' }];
    default: {
      const unknown: never = input;
      throw new Error(`unknown run input ${JSON.stringify(unknown)}`);
    }
  }
}

function decideMessage(message: SessionMessage, at: string, state: RunWorkflowState): RunEffect[] {
  switch (message.type) {
    case 'steer':
      // A run that ended in between refuses as a cancel does; the steering caller then starts a new run.
      if (state.ending !== null) return [reply(sessionRefusal('run_not_active', 'the run has already ended'))];
      return [
        { type: 'record', command: { type: 'JoinPrompt', text: message.text, at }, correlationId: message.correlationId },
        { type: 'queue_steering', text: message.text },
        reply(OK),
      ];
    case 'answer': {
      // The decider judges every answer (unknown, no longer pending, not offered), open question or not.
      const { toolCallId, content, stream, correlationId } = message;
      return [{ type: 'record_answer', toolCallId, raw: content, stream, correlationId, waitingOn: state.question }];
    }
    case 'disconnect':
      if (state.response === null || state.response.streamId !== message.streamId) return [reply(OK)];
      if (message.background) return [{ type: 'detach_response' }, reply(OK)];
      return [...stop(state, { reason: 'client_disconnected', tell: 'nothing' }), reply(OK)];
    case 'cancel':
      if (state.ending !== null) return [reply(sessionRefusal('run_not_active', 'the run has already ended'))];
      return [...stop(state, { reason: 'caller_cancelled', tell: 'stop' }), reply(OK)];
    case 'probe':
      return [reply(OK)];
    case 'end':
      return [...stop(state, { reason: message.reason, tell: 'run_ended' }), { type: 'await_finished' }, reply(OK)];
    default: {
      const unknown: never = message;
      return [reply(sessionRefusal('invalid_body', `unknown session message ${JSON.stringify(unknown)}`))];
    }
  }
}

/** The loop threw: a run nobody stopped failed (the model provider's error as it is, anything else as internal). */
function decideFailure(state: RunWorkflowState, failure: LoopFailure, at: string): RunEffect[] {
  if (state.ending !== null) return conclude(state, { finish: 'stop' }, [], at);
  if (failure.kind === 'model') return conclude(state, { finish: 'error', reason: failure.reason, message: failure.message }, [], at);
  const log: RunEffect = { type: 'log_error', message: `run ${state.runId} failed: ${failure.detail}` };
  return conclude(state, { finish: 'error', reason: 'internal_error', message: 'the run failed' }, [log], at);
}

/** The loop is over: the run is no longer active, and its end (stopped early, else its outcome) is recorded. */
function conclude(state: RunWorkflowState, outcome: Outcome, before: RunEffect[], at: string): RunEffect[] {
  const { ending } = state;
  return [
    ...before,
    { type: 'disarm_execution_deadline' },
    { type: 'measure_run', ending: ending === null ? outcome.finish : `cancelled:${ending.reason}` },
    { type: 'record_ending', command: endingCommand(state.runId, ending, outcome, at), ending, outcome },
    { type: 'flush_log' },
  ];
}

/** Stops the run once, for the first reason that comes. */
function stop(state: RunWorkflowState, ending: Ending): RunEffect[] {
  if (state.ending !== null) return [];
  return [{ type: 'stop_loop', ending }, { type: 'give_up_question' }];
}

function reply(value: SessionMessageReply): RunEffect {
  return { type: 'reply', reply: value };
}

/** What the run has done once `effect` is done. */
export function evolve(state: RunWorkflowState, effect: RunEffect): RunWorkflowState {
  switch (effect.type) {
    case 'attach_response':
      return { ...state, response: { streamId: effect.stream?.streamId ?? null } };
    case 'detach_response':
    case 'abandon_response':
      return state.response === null ? state : { ...state, response: { streamId: null } };
    case 'end_response_with_question':
    case 'end_response_with_run':
      return { ...state, response: null };
    case 'stop_loop':
      return { ...state, ending: effect.ending };
    case 'await_answer':
      return { ...state, question: effect.toolCallId };
    case 'settle_question':
      return state.question === effect.toolCallId ? { ...state, question: null } : state;
    case 'give_up_question':
      return { ...state, question: null };
    case 'record_ending':
      return { ...state, concluded: { ending: effect.ending, outcome: effect.outcome } };
    default:
      return state;
  }
}

/** True once the run was stopped: the loop then stops where it is. */
export function isStopped(state: RunWorkflowState): boolean {
  return state.ending !== null;
}
