import { performance } from 'node:perf_hooks';
import { Controller, Get, HttpCode, Inject, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { parseAnalyticsQuery, subjectsFor } from '@interns/contracts';
import type {
  AnalyticsMetaReply,
  AnalyticsMetaRequest,
  AnalyticsQueryReply,
  AnalyticsQueryRequest,
  PlatformConfig,
  Subjects,
} from '@interns/contracts';
import { CredentialResolver } from '@interns/identity';
import { RpcClient, RpcTimeoutError } from '@interns/messaging';
import { AuthFailureLimiter } from '../auth/auth-failure-limiter';
import { HttpErrorException } from '../chat/http-error.exception';
import { rateLimitedError } from '../http/http-errors';
import { AnalyticsQueryLimiter } from './analytics-query-limiter';
import { jsonBodyOf } from '../http/body-rules';
import { clientAddressOf } from '../http/client-address';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { requireManagementKey } from './management-key.check';

/**
 * `/api/v1/analytics` (CONTRACT sections 9 and 14). The admission hook's intern checks leave these routes alone:
 * they have their own credential rule (management keys only) and error shape (no `metadata`, see
 * api-exception.filter.ts). The catalogue and the queries are asked of the analytics service, which owns what can
 * be queried.
 */
@Controller('analytics')
export class AnalyticsHttpController {
  private readonly subjects: Subjects;

  constructor(
    @Inject(CredentialResolver) private readonly resolver: CredentialResolver,
    @Inject(RpcClient) private readonly rpc: RpcClient,
    @Inject(AuthFailureLimiter) private readonly authFailures: AuthFailureLimiter,
    @Inject(AnalyticsQueryLimiter) private readonly queryBudget: AnalyticsQueryLimiter,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {
    this.subjects = subjectsFor(config.natsPrefix);
  }

  @Get('meta')
  async meta(@Req() request: FastifyRequest): Promise<AnalyticsMetaReply> {
    const credential = await this.managementKey(request);
    const correlationId = request.gateway?.correlationId ?? '';
    const payload: AnalyticsMetaRequest = { correlationId, organizationId: credential.organizationId };
    return this.ask<AnalyticsMetaReply>(request, this.subjects.analytics.meta, payload);
  }

  /**
   * The credential first (401/403, like meta), then the body rules (415, 400 naming the broken rule): a caller
   * without a management key learns nothing about the body. The organization is the key's, never the body's.
   * Only the size limit (413) comes before the credential: Fastify enforces it while reading, before any route.
   */
  @Post('query')
  @HttpCode(200)
  async query(@Req() request: FastifyRequest): Promise<AnalyticsQueryReply> {
    const credential = await this.managementKey(request);
    const query = parseAnalyticsQuery(jsonBodyOf(request));
    // Counted once the query is one: a body refused 400 costs the analytics service nothing.
    const verdict = await this.queryBudget.consume(credential.organizationId);
    if (!verdict.allowed) {
      throw new HttpErrorException(
        rateLimitedError(
          verdict.retryAfterSeconds,
          `this organization's analytics queries are limited to ${this.config.analyticsQueriesPerMinute} a minute (ANALYTICS_QUERIES_PER_MINUTE)`,
        ),
      );
    }
    const correlationId = request.gateway?.correlationId ?? '';
    const payload: AnalyticsQueryRequest = { correlationId, organizationId: credential.organizationId, query };
    return this.ask<AnalyticsQueryReply>(request, this.subjects.analytics.query, payload);
  }

  private managementKey(request: FastifyRequest) {
    return requireManagementKey(this.resolver, request.headers.authorization, {
      limiter: this.authFailures,
      address: clientAddressOf(request, this.config.trustForwardedFor),
    });
  }

  private ask<T>(request: FastifyRequest, subject: string, payload: AnalyticsMetaRequest | AnalyticsQueryRequest): Promise<T> {
    return this.rpc.request<T>(subject, payload, {
      timeoutMs: remainingDeadlineMs(request, subject),
      correlationId: payload.correlationId,
    });
  }
}

/** What is left of the route deadline, measured from the request's arrival (408 once it is spent). */
function remainingDeadlineMs(request: FastifyRequest, subject: string): number {
  const state = request.gateway;
  const remaining = state === null ? 0 : state.routeDeadlineMs - (performance.now() - state.arrivedAt);
  if (remaining < 1) throw new RpcTimeoutError(subject, 0);
  return Math.floor(remaining);
}
