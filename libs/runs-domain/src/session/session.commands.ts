import type { ApprovalMode, Question } from '@interns/contracts';
import type { RunCancelReason, RunProgressEvent, SessionOrigin } from './session.events';

export type SessionCommand =
  | { type: 'OpenSession'; sessionId: string; internId: string; callerId: string; origin: SessionOrigin; at: string }
  | {
      type: 'StartRun';
      runId: string;
      prompt: string;
      approvalMode: ApprovalMode;
      model: string;
      ownerId: string;
      origin: SessionOrigin;
      at: string;
    }
  | { type: 'JoinPrompt'; text: string; at: string }
  | { type: 'RecordProgress'; runId: string; events: RunProgressEvent[] }
  | { type: 'AskQuestion'; runId: string; toolCallId: string; question: Question; expiresAt: string }
  | { type: 'AnswerQuestion'; toolCallId: string; raw: string; by: 'caller' | 'fallback' }
  | { type: 'ExpireQuestion'; toolCallId: string; at: string }
  | { type: 'FinishRun'; runId: string; error: { reason: string; message: string } | null; at: string }
  /** The run reached a cap (MAX_TOOL_CALLS_PER_RUN): it ends with finish `length`. */
  | { type: 'FinishRunAtLimit'; runId: string; at: string }
  | { type: 'CancelRun'; runId: string; reason: RunCancelReason; at: string };
