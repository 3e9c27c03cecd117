/**
 * Runs as resources (CONTRACT section 12): the Run object, the question inbox, and the requests the gateway
 * sends the runs service for them.
 */
import type { FinishReason, Question, Usage } from './chat';
import type { RequestContext } from './principal';

export const RUN_STATUSES = ['running', 'awaiting_input', 'completed', 'failed', 'cancelled', 'expired'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** A run in one of these may still produce chunks, be cancelled or be answered. */
export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = ['running', 'awaiting_input'];

export const RUN_ORIGINS = ['chat', 'invoke'] as const;
export type RunOrigin = (typeof RUN_ORIGINS)[number];


export interface RunOpenQuestion {
  tool_call_id: string;
  /** The `service.provide_input` arguments, as the tool call chunk carries them (parsed). */
  arguments: Question;
  expires_at: string;
}

export interface RunResource {
  id: string;
  intern_id: string;
  session_id: string;
  origin: RunOrigin;
  status: RunStatus;
  /** The finish of the last finish chunk the run's readers got (null while it runs). */
  finish_reason: FinishReason | null;
  model: string;
  usage: Usage | null;
  open_question: RunOpenQuestion | null;
  created_at: string;
  ended_at: string | null;
}

export interface RunPage {
  data: RunResource[];
  has_more: boolean;
  next_cursor?: string;
}

export interface InboxQuestion {
  run_id: string;
  session_id: string;
  tool_call_id: string;
  arguments: Question;
  expires_at: string;
}

export interface QuestionInbox {
  data: InboxQuestion[];
}

export interface RunListQuery {
  limit: number;
  statuses: RunStatus[] | null;
  startingAfter: string | null;
  sessionId: string | null;
}

export interface ListRunsRequest {
  context: RequestContext;
  internId: string;
  query: RunListQuery;
}

/** Get, cancel and follow a run. */
export interface RunRequest {
  context: RequestContext;
  internId: string;
  runId: string;
}

/** What the gateway needs to follow a run's chunks: the run as the caller may see it, and whether they are kept. */
export interface RunStreamGrant {
  run: RunResource;
  /** The chunks' subject in the run chunk stream. */
  subject: string;
}

export interface ListQuestionsRequest {
  context: RequestContext;
  internId: string;
}

export interface AnswerRunBody {
  tool_call_id: string;
  content: string;
}

export interface AnswerRunRequest {
  context: RequestContext;
  internId: string;
  runId: string;
  answer: AnswerRunBody;
}
