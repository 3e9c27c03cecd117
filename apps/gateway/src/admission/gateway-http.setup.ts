import { performance } from 'node:perf_hooks';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { installHttpMetrics } from '@interns/service-runtime';
import { tracingEnabled } from '@interns/observability';
import { installRawBodyParser } from '../http/body-rules';
import { DoorHosts } from '../door/door-host';
import { registerDoorRoutes } from '../door/door-routes';
import { DoorHandlers } from '../door/door.handlers';
import { DoorTerminals } from '../door/door-terminals';
import { RequestAdmission } from './request-admission.hook';
import { passUploadBodyThrough } from '../files/file-upload-body';
import { ConsoleBuild, defaultConsoleDir } from '../console/console-build';
import { registerConsoleRoutes } from '../console/console-routes';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import type { PlatformConfig } from '@interns/contracts';

/**
 * Wires the gateway's request handling into Fastify once the application is built (before it listens):
 * request metrics, the per-request state, the catch-all body parser, the admission hook, the door's routes (Fastify
 * routes of their own: they live outside `/api/v1` and only for hosts under INTERN_DOMAIN), the web console's static
 * files at `/console/` (console/), the file uploads' streamed bodies, and the request log: one `info` line per request
 * (method, route pattern, status, ms, correlation id; probes and scrapes at `debug`).
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
    if (Logger.isLevelEnabled('log')) fastify.addHook('onResponse', this.logRequest);
  }

  /**
   * The route pattern (`/api/v1/interns/:intern_id`), never the URL: ids stay out of the line and a query string
   * (which may carry `?access_token=`) is never written. A path no route matches is `(no route)`.
   */
  private readonly logRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const state = request.gateway;
    const route = (state === null ? request.routeOptions.url : state.route) ?? NO_ROUTE;
    const ms = state === null ? null : Math.round((performance.now() - state.arrivedAt) * 10) / 10;
    const line = `${request.method} ${route} ${reply.statusCode} ${ms === null ? '-' : `${ms}ms`}`;
    const fields = { method: request.method, route, status: reply.statusCode, duration_ms: ms, correlation_id: state?.correlationId };
    if (QUIET_ROUTES.has(route)) this.logger.debug(line, fields);
    else this.logger.log(line, fields);
  };
}

const NO_ROUTE = '(no route)';
/** Asked every few seconds by probes and scrapers: logged at `debug` only. */
const QUIET_ROUTES: ReadonlySet<string> = new Set(['/health/live', '/health/ready', '/metrics']);
