import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { CORRELATION_ID_HEADER } from '../gateway-request';
import { apiErrorForStatus, sendHttpError } from './http-errors';

/**
 * Fastify's `frameworkErrors`: the router refuses a malformed target (400) before any hook or Nest's
 * error handler runs, and would answer with its own body. The API answers in its envelope instead.
 */
export function answerFrameworkError(routeDeadlineMs: number) {
  return (error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void => {
    reply.header(CORRELATION_ID_HEADER, randomUUID());
    const status = error.statusCode ?? 500;
    sendHttpError(reply, apiErrorForStatus(status, status === 400 ? 'malformed request target' : error.message, routeDeadlineMs));
  };
}
