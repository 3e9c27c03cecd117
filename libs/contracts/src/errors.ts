/** Error reasons of CONTRACT section 2, with their HTTP status and retryability, in one place. */
export const ERROR_REASONS = {
  invalid_body: { status: 400, retryable: false },
  /**
   * The door (interface section 20): a `POST /api/invoke` whose v2 signature does not hold (body, route, timestamp,
   * nonce, user). A 401 that, unlike section 1's, names its reason: the token was good, the signature was not.
   */
  invalid_signature: { status: 401, retryable: false },
  forbidden: { status: 403, retryable: false },
  personal_identity_required: { status: 403, retryable: false },
  insufficient_scope: { status: 403, retryable: false },
  not_found: { status: 404, retryable: false },
  interaction_unknown: { status: 404, retryable: false },
  timeout: { status: 408, retryable: true },
  intern_busy: { status: 409, retryable: false },
  name_taken: { status: 409, retryable: false },
  idempotency_key_reused: { status: 409, retryable: false },
  workspace_loss_not_acknowledged: { status: 409, retryable: false },
  vault_not_attachable: { status: 409, retryable: false },
  intern_not_running: { status: 409, retryable: false },
  busy: { status: 409, retryable: true },
  interaction_not_pending: { status: 409, retryable: false },
  /** A per-workspace or per-intern cap (CONTRACT section 22); the message names it. */
  limit_reached: { status: 409, retryable: false },
  /** Cancel of a run that has already ended. */
  run_not_active: { status: 409, retryable: false },
  /** Chat stream error chunk: the intern ended the run (suspend, delete, a deadline) while the client was connected. */
  run_ended: { status: 410, retryable: false },
  /** A run's stream asked for after RUN_REPLAY_RETENTION_MS past its end: its chunks are gone. */
  run_expired: { status: 410, retryable: false },
  /**
   * The workspace event stream asked to resume after an event it no longer holds (older than EVENTS_REPLAY_RETENTION_MS,
   * or an id it never sent this credential): the client reads the current state again and reconnects without Last-Event-ID.
   */
  events_expired: { status: 410, retryable: false },
  payload_too_large: { status: 413, retryable: false },
  /** The HTTP layer's own answer: the request line alone is over the head's size limit. */
  uri_too_long: { status: 414, retryable: false },
  unsupported_media_type: { status: 415, retryable: false },
  rate_limited: { status: 429, retryable: true },
  /** The HTTP layer's own answer: the request's head (request line and headers) is over its size limit. */
  headers_too_large: { status: 431, retryable: false },
  internal_error: { status: 500, retryable: true },
  configuration_error: { status: 500, retryable: false },
  /** Chat stream error chunk: the link to the run broke without the run's confirmation. */
  stream_severed: { status: 502, retryable: true },
  /** A vault write while the organization's lifecycle writes are off (interface section 18); reads still work. */
  vault_writes_disabled: { status: 503, retryable: false },
} as const satisfies Record<string, { status: number; retryable: boolean }>;

export type ErrorReason = keyof typeof ERROR_REASONS;

export const UNAUTHENTICATED_MESSAGE = 'invalid or missing API key';

/** The intern routes' error body. `metadata` is present everywhere except on 401. */
export interface ErrorEnvelope {
  error: {
    code: number;
    message: string;
    metadata?: { reason: ErrorReason; retryable: boolean };
  };
}

export function errorEnvelope(reason: ErrorReason, message: string): ErrorEnvelope {
  const { status, retryable } = ERROR_REASONS[reason];
  return { error: { code: status, message, metadata: { reason, retryable } } };
}

export function unauthenticatedEnvelope(message = UNAUTHENTICATED_MESSAGE): ErrorEnvelope {
  return { error: { code: 401, message } };
}

/**
 * What a service answers instead of a result when a command or query is refused.
 * Travels over NATS as the reply's `err`; the gateway maps it to the HTTP envelope.
 */
export interface ServiceErrorPayload {
  kind: 'service_error';
  reason: ErrorReason;
  message: string;
}

export function isServiceErrorPayload(value: unknown): value is ServiceErrorPayload {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as ServiceErrorPayload).kind === 'service_error' &&
    typeof (value as ServiceErrorPayload).reason === 'string' &&
    (value as ServiceErrorPayload).reason in ERROR_REASONS
  );
}

/** A refusal raised by domain or service code; framework-free so deciders can throw it. */
export class DomainError extends Error {
  constructor(
    readonly reason: ErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  toPayload(): ServiceErrorPayload {
    return { kind: 'service_error', reason: this.reason, message: this.message };
  }
}
