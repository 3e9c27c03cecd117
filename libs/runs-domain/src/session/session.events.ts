import type { ApprovalMode, ParsedAnswer, Question, RunEndReason, Usage } from '@interns/contracts';

/** Where a session was opened: invoke sessions are the only ones invoke accepts back (CONTRACT section 7). */
export type SessionOrigin = 'chat' | 'invoke';

/**
 * Why a run stopped before finishing: the intern ended it (suspend, delete, a deadline), the client left
 * mid-stream or answered `cancel`, or its owning replica vanished and another found it orphaned.
 */
export type RunCancelReason = RunEndReason | 'client_disconnected' | 'caller_cancelled' | 'owner_lost';

/** Tools the agent loop executes itself (the question tool is a QuestionAsked instead). */
export type ToolName = 'shell';

export interface SessionOpened {
  type: 'SessionOpened';
  data: { sessionId: string; internId: string; callerId: string; origin: SessionOrigin; at: string };
}

export interface RunStarted {
  type: 'RunStarted';
  data: {
    runId: string;
    prompt: string;
    approvalMode: ApprovalMode;
    /** The effective model. */
    model: string;
    /** The runs replica that executes the run and serves the session subject. */
    ownerId: string;
    /** Chat or invoke started it (a chat may go on in an invoke session); absent before runs were resources: the session's. */
    origin?: SessionOrigin;
    at: string;
  };
}

/** A prompt that steered a going run. */
export interface PromptJoined {
  type: 'PromptJoined';
  data: { runId: string; text: string; at: string };
}

export interface ModelRequested {
  type: 'ModelRequested';
  data: { runId: string; turn: number; at: string };
}

/** What a model turn streamed to the client, whole (chunks are not stored one by one). */
export interface OutputProduced {
  type: 'OutputProduced';
  data: { runId: string; text: string };
}

/** Who consented to a tool call: self-drive, a standing `allow_always`, or the caller's answer to a permission question. */
export type ToolConsent = 'self-drive' | 'standing' | 'caller';

export interface ToolCalled {
  type: 'ToolCalled';
  data: {
    runId: string;
    toolCallId: string;
    tool: ToolName;
    arguments: string;
    consent: ToolConsent;
  };
}

export interface ToolCompleted {
  type: 'ToolCompleted';
  data: { runId: string; toolCallId: string; result: string };
}

/** A tool call the loop did not run: the caller (or a standing `reject_always`) refused it. */
export interface ToolRefused {
  type: 'ToolRefused';
  data: { runId: string; toolCallId: string; tool: ToolName; arguments: string; result: string };
}

export interface QuestionAsked {
  type: 'QuestionAsked';
  data: { runId: string; toolCallId: string; question: Question; expiresAt: string };
}

export interface QuestionAnswered {
  type: 'QuestionAnswered';
  data: { runId: string; toolCallId: string; answer: ParsedAnswer; by: 'caller' | 'fallback' };
}

export interface QuestionExpired {
  type: 'QuestionExpired';
  data: { runId: string; toolCallId: string };
}

export interface UsageRecorded {
  type: 'UsageRecorded';
  data: { runId: string; promptTokens: number; completionTokens: number };
}

/** How a run that was not cancelled ended (CONTRACT section 12's finish reasons, without `tool_calls`). */
export type RunFinishReason = 'stop' | 'error' | 'length';

export interface RunFinished {
  type: 'RunFinished';
  data: {
    runId: string;
    /** `length`: the run reached a cap (MAX_TOOL_CALLS_PER_RUN) before the model finished. */
    finishReason: RunFinishReason;
    /** Set when finishReason is `error`. */
    error: { reason: string; message: string } | null;
    /** The run's total, null when the model reported none. */
    usage: Usage | null;
    at: string;
  };
}

export interface RunCancelled {
  type: 'RunCancelled';
  data: { runId: string; reason: RunCancelReason; at: string };
}

/** What a run records as it goes (appended by its owner between the start and the end). */
export type RunProgressEvent =
  | ModelRequested
  | OutputProduced
  | ToolCalled
  | ToolCompleted
  | ToolRefused
  | UsageRecorded;

export type SessionEvent =
  | SessionOpened
  | RunStarted
  | PromptJoined
  | RunProgressEvent
  | QuestionAsked
  | QuestionAnswered
  | QuestionExpired
  | RunFinished
  | RunCancelled;

export type SessionEventType = SessionEvent['type'];

export const SESSION_STREAM_TYPE = 'session';

export function sessionStreamId(sessionId: string): string {
  return `session-${sessionId}`;
}

export function sessionIdOfStream(streamId: string): string {
  return streamId.slice('session-'.length);
}
