/**
 * The session channel between a run's caller and the runs replica that owns the run (one subject per session): what
 * a caller may tell a going run, and the owner's typed answer.
 */
import type { ApprovalMode } from './chat';
import { type ErrorReason, isServiceErrorPayload, type ServiceErrorPayload } from './errors';

/** Why the intern ends a run: told to an attached client as 410 `run_ended`. */
export type RunEndReason = InternEndsRunsReason | 'execution_deadline' | 'interaction_deadline';
/** The intern ends all its runs when it is suspended or deleted. */
export type InternEndsRunsReason = 'intern_suspended' | 'intern_deleted';

export type SessionMessage =
  /** A prompt for the going run (steering). */
  | { type: 'steer'; text: string; correlationId: string }
  /**
   * An answer to the run's open question; the response streams on `stream` (chat), or to the run's chunk log
   * only when null (the answer route: followed with the run's stream route).
   */
  | {
      type: 'answer';
      toolCallId: string;
      content: string;
      stream: { streamId: string; created: number } | null;
      approvalMode: ApprovalMode;
      correlationId: string;
    }
  /** The caller cancels the run (`POST .../runs/{id}/cancel`). */
  | { type: 'cancel'; correlationId: string }
  /** The client of `streamId` left before `[DONE]`; the run goes on without it when `background`, else it is cancelled. */
  | { type: 'disconnect'; streamId: string; background: boolean }
  /** The intern ends the run (suspend, delete). */
  | { type: 'end'; reason: InternEndsRunsReason; correlationId: string }
  /** Is the run's owner alive? (A run whose owner does not answer is orphaned.) */
  | { type: 'probe' };

/**
 * The owner's answer to a SessionMessage: done, or refused with the same payload a service's NATS reply carries as
 * `err` (a reason of ERROR_REASONS, so the refusal reaches the HTTP caller as it is, without a cast).
 */
export type SessionMessageReply = { ok: true } | ({ ok: false } & ServiceErrorPayload);

export function sessionRefusal(reason: ErrorReason, message: string): SessionMessageReply {
  return { ok: false, kind: 'service_error', reason, message };
}

/** A reply as it arrives off the wire: `{ok:true}`, or a refusal whose reason is a known one (else it is no reply). */
export function isSessionMessageReply(value: unknown): value is SessionMessageReply {
  if (typeof value !== 'object' || value === null) return false;
  const { ok } = value as { ok?: unknown };
  return ok === true || (ok === false && isServiceErrorPayload(value) && typeof value.message === 'string');
}
