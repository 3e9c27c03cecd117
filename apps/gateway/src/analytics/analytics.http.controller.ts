import { performance } from 'node:perf_hooks';
import { Controller, Get, Inject, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { subjectsFor } from '@interns/contracts';
import type { AnalyticsMetaReply, AnalyticsMetaRequest, PlatformConfig, Subjects } from '@interns/contracts';
import { CredentialResolver } from '@interns/identity';
import { RpcClient, RpcTimeoutError } from '@interns/messaging';
import { AuthFailureLimiter } from '../auth-failure-limiter';
import { clientAddressOf } from '../client-address';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { requireManagementKey } from './management-key.check';

/**
 * `/api/v1/analytics` (CONTRACT section 9). The admission hook's intern checks leave these routes alone: they have
 * their own credential rule (management keys only) and error shape (no `metadata`, see
 * api-exception.filter.ts). The catalogue is asked of the analytics service, which owns what can be queried.
 */
@Controller('analytics')
export class AnalyticsHttpController {
  private readonly subjects: Subjects;

  constructor(
    @Inject(CredentialResolver) private readonly resolver: CredentialResolver,
    @Inject(RpcClient) private readonly rpc: RpcClient,
    @Inject(AuthFailureLimiter) private readonly authFailures: AuthFailureLimiter,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {
    this.subjects = subjectsFor(config.natsPrefix);
  }

  @Get('meta')
  async meta(@Req() request: FastifyRequest): Promise<AnalyticsMetaReply> {
    const credential = await requireManagementKey(this.resolver, request.headers.authorization, {
      limiter: this.authFailures,
      address: clientAddressOf(request, this.config.trustForwardedFor),
    });
    const correlationId = request.gateway?.correlationId ?? '';
    const payload: AnalyticsMetaRequest = { correlationId, organizationId: credential.organizationId };
    return this.rpc.request<AnalyticsMetaReply>(this.subjects.analytics.meta, payload, {
      timeoutMs: remainingDeadlineMs(request, this.subjects.analytics.meta),
      correlationId,
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
