// admission/: the gateway's request pipeline around the route folders: the Fastify setup (body parsers, the door and
// console routes), the admission hook (CONTRACT section 1's checks before any handler) and the exception filter after it.
import { randomUUID } from 'node:crypto';
import { ArgumentsHost, Catch, HttpException, Inject, Logger } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '@interns/contracts';
import type { PlatformConfig } from '@interns/contracts';
import { RemoteServiceError, RpcTimeoutError, RpcUnavailableError } from '@interns/messaging';
import { endHttpServerSpan, redactUrlCredentials, tracingEnabled } from '@interns/observability';
import { markAnsweredOnSocket } from '@interns/service-runtime';
import { isAnalyticsPath, withoutMetadata } from '../analytics/analytics-errors';
import { HttpErrorException } from '../chat/http-error.exception';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { apiErrorForStatus, HttpError, sendHttpError, toHttpError } from '../http/http-errors';
import { answerBeforeBody } from '../http/http-layer';

/**
 * Node's error on this request's own stream when its connection ended (or its framing broke) before the body was
 * read. Only then: a reset of another connection (PostgreSQL, NATS) while serving is a failure like any other.
 */
function isClientAbort(exception: unknown, request: FastifyRequest): boolean {
  const { code, message } = (exception ?? {}) as { code?: unknown; message?: unknown };
  const aborted = request.raw.readableAborted || request.raw.destroyed;
  return aborted && (code === 'ECONNRESET' || message === 'aborted');
}

/** Paths that keep Nest's own answers (terminus' 503 body on readiness); everything else is the API's. */
const OPERATIONAL_PATHS = ['/health/', '/metrics'];

/**
 * The one error path of the HTTP surface: thrown exceptions, Fastify's own errors (body limit, bad
 * framing; Nest maps them to HttpException) and Nest's not-found handler all answer the envelope of
 * CONTRACT section 2, with `Retry-After` on retryable reasons. Nest's default bodies never reach a client
 * of the API. An unknown method on a known path is a 404 `not_found` like any unknown route (Fastify
 * routes by method and path and has no 405; the contract has no reason for one).
 */
@Catch()
export class ApiExceptionFilter extends BaseExceptionFilter {
  private readonly logger = new Logger('HttpErrors');

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig) {
    super();
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    if (OPERATIONAL_PATHS.some((prefix) => request.url.startsWith(prefix))) {
      super.catch(exception, host);
      return;
    }
    if (isClientAbort(exception, request)) {
      // Nobody is left to answer, and it is no fault of the gateway's: no answer, no error line.
      this.logger.debug(`${request.method} ${redactUrlCredentials(request.url)}: the request was aborted`, {
        correlation_id: request.gateway?.correlationId,
      });
      return;
    }
    const error = this.toApiError(exception, request);
    if (reply.sent) return;
    // Analytics routes answer the same statuses and messages without `metadata` (CONTRACT section 2).
    const answer = isAnalyticsPath(request.url) ? withoutMetadata(error) : error;
    if (answer.status === 413 && !request.raw.complete) {
      // Refused before its body was read: answered on the socket, then the rest of the body is read and dropped.
      // Hijacked, the reply runs no onResponse hook: the metrics and the span are told here.
      reply.hijack();
      markAnsweredOnSocket(reply.raw, answer.status);
      const traceContext = request.gateway?.traceContext;
      if (traceContext !== undefined && tracingEnabled()) endHttpServerSpan(traceContext, answer.status);
      answerBeforeBody(request.raw, answer, request.gateway?.correlationId ?? randomUUID());
      return;
    }
    sendHttpError(reply, answer);
  }

  private toApiError(exception: unknown, request: FastifyRequest): HttpError {
    const correlationId = request.gateway?.correlationId;
    const deadlineMs = request.gateway?.routeDeadlineMs ?? this.config.lifecycleRouteDeadlineMs;
    if (exception instanceof HttpErrorException) return exception.httpError;
    if (exception instanceof HttpException) return this.fromHttpException(exception, deadlineMs, correlationId);
    if (exception instanceof DomainError || exception instanceof RemoteServiceError) {
      return toHttpError(exception, deadlineMs);
    }
    if (exception instanceof RpcTimeoutError || exception instanceof RpcUnavailableError) {
      this.logger.warn(`${request.method} ${redactUrlCredentials(request.url)}: ${exception.message}`, { correlation_id: correlationId });
      return toHttpError(exception, deadlineMs);
    }
    this.logger.error(
      `${request.method} ${redactUrlCredentials(request.url)}: ${exception instanceof Error ? (exception.stack ?? exception.message) : String(exception)}`,
      { correlation_id: correlationId },
    );
    return toHttpError(exception, deadlineMs);
  }

  /** Nest's and Fastify's errors carry only a status: each maps to the contract reason for it. */
  private fromHttpException(exception: HttpException, deadlineMs: number, correlationId: string | undefined): HttpError {
    const status = exception.getStatus();
    if (status >= 500) this.logger.error(exception.stack ?? exception.message, { correlation_id: correlationId });
    return apiErrorForStatus(status, exception.message, deadlineMs);
  }
}
