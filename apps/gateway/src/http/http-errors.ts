import type { FastifyReply } from 'fastify';
import {
  DomainError,
  ERROR_REASONS,
  ErrorEnvelope,
  errorEnvelope,
  ErrorReason,
  MAX_BODY_BYTES,
  unauthenticatedEnvelope,
} from '@interns/contracts';
import { RemoteServiceError, RpcTimeoutError, RpcUnavailableError } from '@interns/messaging';

// HTTP is the gateway's alone: every failure, local or from a service over NATS, becomes an HttpError here.

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
  if (reasoned) return apiError(reasoned.reason, reasoned.message);
  const message = error instanceof RpcUnavailableError ? 'service unavailable, try again' : 'internal error';
  return {
    status: 500,
    body: errorEnvelope('internal_error', message),
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  };
}

/** The envelope of CONTRACT section 2 for a reason, with `Retry-After` when the reason is retryable. */
export function apiError(reason: ErrorReason, message: string): HttpError {
  const { status, retryable } = ERROR_REASONS[reason];
  return {
    status,
    body: errorEnvelope(reason, message),
    headers: retryable ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {},
  };
}

/** 429 `rate_limited` with the caller's own wait (a limiter's window), not the generic retry hint. */
export function rateLimitedError(retryAfterSeconds: number, message: string): HttpError {
  const error = apiError('rate_limited', message);
  return { ...error, headers: { ...error.headers, 'retry-after': String(retryAfterSeconds) } };
}

/** 401: the one error without `metadata`. */
export function unauthenticatedError(): HttpError {
  return { status: 401, body: unauthenticatedEnvelope(), headers: {} };
}

export function sendHttpError(reply: FastifyReply, error: HttpError): FastifyReply {
  return reply
    .code(error.status)
    .headers(error.headers)
    .type('application/json; charset=utf-8')
    .send(error.body);
}

/**
 * For errors that carry only an HTTP status (Nest's exceptions, Fastify's own errors): the contract reason
 * for that status. An unknown method on a known path arrives as 404 (Fastify has no 405), and 405 or 414
 * would too: neither names a resource. Other 4xx are the request's fault (400), 5xx are transient (500).
 */
export function apiErrorForStatus(status: number, message: string, routeDeadlineMs: number): HttpError {
  switch (status) {
    case 400:
      return apiError('invalid_body', message);
    case 401:
      return unauthenticatedError();
    case 403:
      return apiError('forbidden', 'forbidden');
    case 404:
    case 405:
    case 414:
      return apiError('not_found', 'not found');
    case 408:
      return timeoutHttpError(routeDeadlineMs);
    case 413:
      return apiError('payload_too_large', `request body is larger than ${MAX_BODY_BYTES} bytes`);
    case 415:
      return apiError('unsupported_media_type', 'Content-Type must be application/json');
    case 429:
      return apiError('rate_limited', 'too many requests');
    default:
      return status < 500 ? apiError('invalid_body', message) : apiError('internal_error', 'internal error');
  }
}
