import type { FastifyReply } from 'fastify';
import { ERROR_REASONS, ErrorReason, errorEnvelope, MAX_BODY_BYTES, unauthenticatedEnvelope } from '@interns/contracts';
import { HttpError, RETRY_AFTER_SECONDS, timeoutHttpError } from '@interns/messaging';

/** The envelope of CONTRACT section 2 for a reason, with `Retry-After` when the reason is retryable. */
export function apiError(reason: ErrorReason, message: string): HttpError {
  const { status, retryable } = ERROR_REASONS[reason];
  return {
    status,
    body: errorEnvelope(reason, message),
    headers: retryable ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {},
  };
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
