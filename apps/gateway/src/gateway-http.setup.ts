import { performance } from 'node:perf_hooks';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { installHttpMetrics } from '@interns/service-runtime';
import { redactUrlCredentials, tracingEnabled } from '@interns/observability';
import { installRawBodyParser } from './body-rules';
import { DoorHosts } from './door/door-host';
import { registerDoorRoutes } from './door/door-routes';
import { DoorHandlers } from './door/door.handlers';
import { DoorTerminals } from './door/door-terminals';
import { RequestAdmission } from './request-admission.hook';
import { passUploadBodyThrough } from './files/file-upload-body';
import { ConsoleBuild, defaultConsoleDir } from './console/console-build';
import { registerConsoleRoutes } from './console/console-routes';
import { GATEWAY_CONFIG } from './gateway.tokens';
import type { PlatformConfig } from '@interns/contracts';

/**
 * Wires the gateway's request handling into Fastify once the application is built (before it listens):
 * request metrics, the per-request state, the catch-all body parser, the admission hook, the door's routes (Fastify
 * routes of their own: they live outside `/api/v1` and only for hosts under INTERN_DOMAIN), the web console's static
 * files at `/console/` (console/), the file uploads' streamed bodies, and a debug-level request log.
 */
@Injectable()
export class GatewayHttpSetup implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('Http');

  constructor(
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    @Inject(RequestAdmission) private readonly admission: RequestAdmission,
    @Inject(DoorHosts) private readonly doorHosts: DoorHosts,
    @Inject(DoorHandlers) private readonly door: DoorHandlers,
    @Inject(DoorTerminals) private readonly terminals: DoorTerminals,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {}

  /** Before the server drains: open terminals would hold it; each ends, its socket told `shutdown`. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.terminals.closeAll();
  }

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    fastify.decorateRequest('gateway', null);
    installRawBodyParser(fastify);
    // First: the admission hook answers refusals itself and ends the onRequest chain, and those count too.
    installHttpMetrics(fastify);
    fastify.addHook('onRequest', this.admission.admit);
    registerDoorRoutes(fastify, this.doorHosts, this.door.routes());
    // No credential: the admission hook leaves paths outside the API's checked routes alone (a door host still gets the door).
    registerConsoleRoutes(fastify, new ConsoleBuild(this.config.consoleDir ?? defaultConsoleDir()));
    // The door's terminal is a WebSocket: its upgrade requests are the HTTP server's, before Fastify.
    this.terminals.attach(fastify.server);
    // After admission (a refused caller never gets to upload): file uploads keep their body as a stream.
    fastify.addHook('preParsing', passUploadBodyThrough);
    // Installed only when tracing or debug logging is on, so the hot path pays nothing otherwise.
    if (tracingEnabled()) {
      fastify.addHook('preHandler', this.admission.enterRequestContext);
      fastify.addHook('onResponse', this.admission.finishRequest);
    }
    if (Logger.isLevelEnabled('debug')) {
      fastify.addHook('onResponse', async (request, reply) => {
        const state = request.gateway;
        const elapsed = state === null ? '-' : `${(performance.now() - state.arrivedAt).toFixed(1)}ms`;
        // A query string may carry a credential (`?access_token=`); the logger only redacts fields.
        this.logger.debug(`${request.method} ${redactUrlCredentials(request.url)} ${reply.statusCode} ${elapsed}`, {
          correlation_id: state?.correlationId,
        });
      });
    }
  }
}
