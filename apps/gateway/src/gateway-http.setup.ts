import { performance } from 'node:perf_hooks';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { installHttpMetrics } from '@interns/health';
import { tracingEnabled } from '@interns/observability';
import { installRawBodyParser } from './body-rules';
import { InternRouteChecks } from './intern-route-checks.hook';

/**
 * Wires the gateway's request handling into Fastify once the application is built (before it listens):
 * request metrics, the per-request state, the catch-all body parser, the checks hook, and a debug-level
 * request log.
 */
@Injectable()
export class GatewayHttpSetup implements OnModuleInit {
  private readonly logger = new Logger('Http');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly checks: InternRouteChecks,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    fastify.decorateRequest('gateway', null);
    installRawBodyParser(fastify);
    // First: the checks hook answers refusals itself and ends the onRequest chain, and those count too.
    installHttpMetrics(fastify);
    fastify.addHook('onRequest', this.checks.onRequest);
    // Installed only when tracing or debug logging is on, so the hot path pays nothing otherwise.
    if (tracingEnabled()) {
      fastify.addHook('preHandler', this.checks.enterRequestContext);
      fastify.addHook('onResponse', this.checks.finishRequest);
    }
    if (Logger.isLevelEnabled('debug')) {
      fastify.addHook('onResponse', async (request, reply) => {
        const state = request.gateway;
        const elapsed = state === null ? '-' : `${(performance.now() - state.arrivedAt).toFixed(1)}ms`;
        this.logger.debug(`${request.method} ${request.url} ${reply.statusCode} ${elapsed}`, {
          correlation_id: state?.correlationId,
        });
      });
    }
  }
}
