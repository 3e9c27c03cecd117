import { DomainError, parseAnswer } from '@interns/contracts';
import type { ApprovalMode, FinishReason, Question, RunStatus, Usage } from '@interns/contracts';
import { endingReasonOf, RUN_ENDINGS } from './run-endings';
import type { GoingRunStatus, RunEndingReason } from './run-endings';
import type { SessionCommand } from './session.commands';
import type { RunCancelled, RunFinished, RunProgressEvent, SessionEvent, SessionOrigin } from './session.events';

export interface ActiveRun {
  runId: string;
  /** Chat or invoke started it (the session's origin for runs recorded before runs had their own). */
  origin: SessionOrigin;
  approvalMode: ApprovalMode;
  model: string;
  ownerId: string;
  /** When it started (its RunStarted's `at`): how long it ran is told at its end. */
  startedAt: string;
  /** `awaiting_input` while it waits on a question, else `running`. */
  status: GoingRunStatus;
  /** The question the run waits on, if any. */
  openQuestion: string | null;
  promptTokens: number;
  completionTokens: number;
  /** Whether the model reported any usage during the run. */
  usageReported: boolean;
}

/** The run the session ended last, as RUN_ENDINGS shows its ending. */
export interface EndedRun {
  runId: string;
  reason: RunEndingReason;
  status: RunStatus;
  finishReason: FinishReason;
  endedAt: string;
}

export type QuestionStatus = 'open' | 'answered' | 'expired' | 'closed';

export interface SessionQuestion {
  runId: string;
  question: Question;
  status: QuestionStatus;
}

export interface SessionAbsent {
  kind: 'absent';
}

export interface SessionOpenState {
  kind: 'open';
  sessionId: string;
  internId: string;
  callerId: string;
  origin: SessionOrigin;
  activeRun: ActiveRun | null;
  /** The run that ended last (null until one has). */
  endedRun: EndedRun | null;
  /** Every question the session's runs asked, by tool call id. */
  questions: Record<string, SessionQuestion>;
  /** A standing answer to shell permission (`allow_always` / `reject_always`) for the rest of the session. */
  standingShellPermission: 'allow' | 'reject' | null;
  runCount: number;
}

export type SessionState = SessionAbsent | SessionOpenState;

export function initialState(): SessionState {
  return { kind: 'absent' };
}

function withRun(state: SessionOpenState, runId: string, change: (run: ActiveRun) => ActiveRun): SessionOpenState {
  if (state.activeRun === null || state.activeRun.runId !== runId) return state;
  return { ...state, activeRun: change(state.activeRun) };
}

function withQuestion(state: SessionOpenState, toolCallId: string, status: QuestionStatus): SessionOpenState {
  const question = state.questions[toolCallId];
  if (question === undefined) return state;
  return { ...state, questions: { ...state.questions, [toolCallId]: { ...question, status } } };
}

/** A run that ends closes its open question (nobody can answer it any more) and shows as its ending's row says. */
function endRun(state: SessionOpenState, event: RunFinished | RunCancelled): SessionOpenState {
  const { runId, at } = event.data;
  if (state.activeRun === null || state.activeRun.runId !== runId) return state;
  const open = state.activeRun.openQuestion;
  const closed = open === null ? state : withQuestion(state, open, 'closed');
  const reason = endingReasonOf(event);
  const { status, finishReason } = RUN_ENDINGS[reason];
  return { ...closed, activeRun: null, endedRun: { runId, reason, status, finishReason, endedAt: at } };
}

export function evolve(state: SessionState, event: SessionEvent): SessionState {
  if (event.type === 'SessionOpened') {
    const { sessionId, internId, callerId, origin } = event.data;
    return {
      kind: 'open',
      sessionId,
      internId,
      callerId,
      origin,
      activeRun: null,
      endedRun: null,
      questions: {},
      standingShellPermission: null,
      runCount: 0,
    };
  }
  if (state.kind !== 'open') return state;
  switch (event.type) {
    case 'RunStarted': {
      const { runId, approvalMode, model, ownerId, at } = event.data;
      const origin = event.data.origin ?? state.origin;
      return {
        ...state,
        runCount: state.runCount + 1,
        activeRun: { runId, origin, approvalMode, model, ownerId, startedAt: at, status: 'running', openQuestion: null, promptTokens: 0, completionTokens: 0, usageReported: false },
      };
    }
    case 'UsageRecorded':
      return withRun(state, event.data.runId, (run) => ({
        ...run,
        promptTokens: run.promptTokens + event.data.promptTokens,
        completionTokens: run.completionTokens + event.data.completionTokens,
        usageReported: true,
      }));
    case 'QuestionAsked': {
      const { runId, toolCallId, question } = event.data;
      const asked = { ...state, questions: { ...state.questions, [toolCallId]: { runId, question, status: 'open' as const } } };
      return withRun(asked, runId, (run) => ({ ...run, status: 'awaiting_input', openQuestion: toolCallId }));
    }
    case 'QuestionAnswered': {
      const { runId, toolCallId, answer } = event.data;
      let answered = withRun(withQuestion(state, toolCallId, 'answered'), runId, (run) => ({ ...run, status: 'running', openQuestion: null }));
      if (answer.kind === 'permission' && answer.option === 'allow_always') {
        answered = { ...answered, standingShellPermission: 'allow' };
      } else if (answer.kind === 'permission' && answer.option === 'reject_always') {
        answered = { ...answered, standingShellPermission: 'reject' };
      }
      return answered;
    }
    case 'QuestionExpired': {
      const { runId, toolCallId } = event.data;
      return withRun(withQuestion(state, toolCallId, 'expired'), runId, (run) => ({ ...run, openQuestion: null }));
    }
    case 'RunFinished':
    case 'RunCancelled':
      return endRun(state, event);
    case 'PromptJoined':
    case 'ModelRequested':
    case 'OutputProduced':
    case 'ToolCalled':
    case 'ToolCompleted':
    case 'ToolRefused':
      return state;
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
}

function requireOpen(state: SessionState): SessionOpenState {
  if (state.kind !== 'open') throw new DomainError('not_found', 'session not found');
  return state;
}

function requireActiveRun(state: SessionState, runId?: string): ActiveRun {
  const open = requireOpen(state);
  const run = open.activeRun;
  if (run === null || (runId !== undefined && run.runId !== runId)) {
    throw new DomainError('interaction_not_pending', 'the run has ended');
  }
  return run;
}

const PROGRESS_TYPES: ReadonlySet<RunProgressEvent['type']> = new Set([
  'ModelRequested',
  'OutputProduced',
  'ToolCalled',
  'ToolCompleted',
  'ToolRefused',
  'UsageRecorded',
]);

function usageOf(run: ActiveRun): Usage | null {
  if (!run.usageReported) return null;
  return {
    prompt_tokens: run.promptTokens,
    completion_tokens: run.completionTokens,
    total_tokens: run.promptTokens + run.completionTokens,
  };
}

/**
 * The session's rules: one run at a time, questions answered once and only while open, answers that fit
 * the question, and a run's record kept to the run that is going.
 */
export function decide(command: SessionCommand, state: SessionState): SessionEvent[] {
  switch (command.type) {
    case 'OpenSession': {
      if (state.kind !== 'absent') throw new DomainError('not_found', 'session id is taken');
      const { sessionId, internId, callerId, origin, at } = command;
      return [{ type: 'SessionOpened', data: { sessionId, internId, callerId, origin, at } }];
    }
    case 'StartRun': {
      const open = requireOpen(state);
      if (open.activeRun !== null) throw new DomainError('busy', 'a run is already going in this session');
      const { runId, prompt, approvalMode, model, ownerId, origin, at } = command;
      return [{ type: 'RunStarted', data: { runId, prompt, approvalMode, model, ownerId, origin, at } }];
    }
    case 'JoinPrompt': {
      const run = requireActiveRun(state);
      return [{ type: 'PromptJoined', data: { runId: run.runId, text: command.text, at: command.at } }];
    }
    case 'RecordProgress': {
      requireActiveRun(state, command.runId);
      for (const event of command.events) {
        if (!PROGRESS_TYPES.has(event.type) || event.data.runId !== command.runId) {
          throw new Error(`${event.type} is not progress of run ${command.runId}`);
        }
      }
      return command.events;
    }
    case 'AskQuestion': {
      const run = requireActiveRun(state, command.runId);
      if (run.openQuestion !== null) throw new Error(`run ${run.runId} already waits on question ${run.openQuestion}`);
      if (state.kind === 'open' && state.questions[command.toolCallId] !== undefined) {
        throw new Error(`tool call id ${command.toolCallId} was already used in this session`);
      }
      const { runId, toolCallId, question, expiresAt } = command;
      return [{ type: 'QuestionAsked', data: { runId, toolCallId, question, expiresAt } }];
    }
    case 'AnswerQuestion': {
      const open = requireOpen(state);
      const asked = open.questions[command.toolCallId];
      if (asked === undefined) throw new DomainError('interaction_unknown', 'no question of this session has that tool_call_id');
      if (asked.status !== 'open') throw new DomainError('interaction_not_pending', `the question was ${asked.status === 'answered' ? 'already answered' : 'closed'}`);
      // An answer that does not fit throws invalid_body and leaves the question open.
      const answer = parseAnswer(asked.question, command.raw);
      return [{ type: 'QuestionAnswered', data: { runId: asked.runId, toolCallId: command.toolCallId, answer, by: command.by } }];
    }
    case 'ExpireQuestion': {
      const open = requireOpen(state);
      const asked = open.questions[command.toolCallId];
      if (asked === undefined || asked.status !== 'open') return [];
      return [
        { type: 'QuestionExpired', data: { runId: asked.runId, toolCallId: command.toolCallId } },
        { type: 'RunCancelled', data: { runId: asked.runId, reason: 'interaction_deadline', at: command.at } },
      ];
    }
    case 'FinishRun': {
      const run = requireActiveRun(state, command.runId);
      const finishReason = command.error === null ? 'stop' : 'error';
      return [{ type: 'RunFinished', data: { runId: run.runId, finishReason, error: command.error, usage: usageOf(run), at: command.at } }];
    }
    case 'FinishRunAtLimit': {
      const run = requireActiveRun(state, command.runId);
      return [{ type: 'RunFinished', data: { runId: run.runId, finishReason: 'length', error: null, usage: usageOf(run), at: command.at } }];
    }
    case 'CancelRun': {
      const open = requireOpen(state);
      if (open.activeRun === null || open.activeRun.runId !== command.runId) return [];
      return [{ type: 'RunCancelled', data: { runId: command.runId, reason: command.reason, at: command.at } }];
    }
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${JSON.stringify(unknown)}`);
    }
  }
}

/** The session decider as one object, for the command handler. */
export const sessionDecider = { decide, evolve, initialState };

/** The usage a finished run reports in its final chunk. */
export function runUsage(state: SessionState): Usage | null {
  return state.kind === 'open' && state.activeRun !== null ? usageOf(state.activeRun) : null;
}
