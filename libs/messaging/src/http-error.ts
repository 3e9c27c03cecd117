import { DomainError, ErrorEnvelope, errorEnvelope, ERROR_REASONS } from '@interns/contracts';
import { RemoteServiceError, RpcTimeoutError, RpcUnavailableError } from './rpc-client';

export interface HttpError {
  status: number;
  body: ErrorEnvelope;
  headers: Record<string, string>;
}

/** Seconds a client should wait before retrying a transient failure. */
export const RETRY_AFTER_SECONDS = 1;

export function formatDeadline(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, '')}s`;
}

export function timeoutHttpError(routeDeadlineMs: number): HttpError {
  return {
    status: 408,
    body: errorEnvelope('timeout', `route deadline of ${formatDeadline(routeDeadlineMs)} exceeded`),
    headers: {},
  };
}

/** Maps whatever a request produced to the contract's envelope (CONTRACT section 2). */
export function toHttpError(error: unknown, routeDeadlineMs: number): HttpError {
  if (error instanceof RpcTimeoutError) return timeoutHttpError(routeDeadlineMs);
  const reasoned =
    error instanceof RemoteServiceError ? error.payload : error instanceof DomainError ? error.toPayload() : null;
  if (reasoned) {
    const { status, retryable } = ERROR_REASONS[reasoned.reason];
    const headers: Record<string, string> = retryable ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {};
    return { status, body: errorEnvelope(reasoned.reason, reasoned.message), headers };
  }
  const message = error instanceof RpcUnavailableError ? 'service unavailable, try again' : 'internal error';
  return {
    status: 500,
    body: errorEnvelope('internal_error', message),
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  };
}
