import type { AddressInfo } from 'node:net';
import type { NatsConnection } from '@nats-io/transport-node';
import type { LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { DataSource } from 'typeorm';
import { MAX_BODY_BYTES, PlatformConfig, subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { installHttpDrain, natsReadiness } from '@interns/service-runtime';
import { CredentialResolver, IDENTITY_SCHEMA, identityMigrations } from '@interns/identity';
import { connectNats, RpcClient, SessionChannel } from '@interns/messaging';
import { JsonLogger, startTracing, stopTracing } from '@interns/observability';
import { AnalyticsQueryLimiter } from './analytics/analytics-query-limiter';
import { applyApiPrefix } from './http/api-prefix';
import { AuthFailureLimiter } from './auth/auth-failure-limiter';
import { ChatTurnLimiter } from './chat/chat-turn-limiter';
import { clientErrorHandler, serveUnknownExpectations } from './http/http-layer';
import { answerFrameworkError } from './http/framework-errors';
import { GatewayModule } from './gateway.module';
import { GatewayDependencies } from './gateway.tokens';

/**
 * Route parameters longer than find-my-way's default (100) would be answered 414 by the router before
 * any check runs; a long bogus intern id must get the check order and then 404 like any other.
 */
const MAX_PARAM_LENGTH = 8192;

export interface RunningGateway {
  app: NestFastifyApplication;
  deps: GatewayDependencies;
  /** The bound port (the configured one unless that was 0). */
  port: number;
  /** Closes HTTP (in-flight requests finish), drains NATS, then ends the pool. */
  close(): Promise<void>;
}

export interface StartGatewayOptions {
  /**
   * Nest's own logger with these levels (in-process tests). Default: the process's JSON logger at
   * LOG_LEVEL (debug adds a line per request).
   */
  logLevels?: LogLevel[];
}

/**
 * The local issuer's key sits on the gateway's own disk and anyone with `admin` can mint tokens with it:
 * a production gateway asked to trust it refuses to start rather than quietly ignore the setting.
 */
export function refuseDevelopmentIdentityInProduction(config: PlatformConfig): void {
  if (config.nodeEnv === 'production' && config.oidcLocalDev) {
    throw new Error('OIDC_LOCAL_DEV=true is refused with NODE_ENV=production: configure OIDC_ISSUER (or OIDC_JWKS_URL/OIDC_JWKS_FILE)');
  }
}

async function closeConnections(nats: NatsConnection | null, dataSource: DataSource | null): Promise<void> {
  if (nats !== null && !nats.isClosed()) await nats.drain().catch(() => nats.close());
  if (dataSource?.isInitialized) await dataSource.destroy();
}

/**
 * Opens what the process shares (the identity schema's pool, one NATS connection, one RPC client, the
 * credential resolver with its cache), builds the Nest app on Fastify and listens on 0.0.0.0.
 * The health lib's `bootstrapService` is not used: the gateway needs its own adapter options
 * (body limit, no proxy trust, no middleware layer, long route parameters) and serves no NATS handlers.
 */
export async function startGateway(config: PlatformConfig, options: StartGatewayOptions = {}): Promise<RunningGateway> {
  refuseDevelopmentIdentityInProduction(config);
  let dataSource: DataSource | null = null;
  let nats: NatsConnection | null = null;
  let deps: GatewayDependencies;
  const logger = options.logLevels ?? JsonLogger.install({ service: 'gateway', level: config.logLevel });
  await startTracing({ exporter: config.tracesExporter, serviceName: config.otelServiceName ?? 'gateway', batchDelayMs: config.otelBatchDelayMs });
  try {
    dataSource = await openDatabase({
      url: config.databaseUrl,
      migrationsUrl: config.migrationsDatabaseUrl,
      schema: IDENTITY_SCHEMA,
      migrations: identityMigrations,
      applicationName: 'gateway',
      migrate: config.runMigrations,
      migrationsWaitMs: config.migrationsWaitMs,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
    });
    nats = await connectNats({ url: config.natsUrl, name: 'gateway', security: config });
    natsReadiness(nats);
    const resolver = new CredentialResolver({
      dataSource,
      cacheTtlMs: config.authCacheTtlMs,
      oidc: {
        issuer: config.oidcIssuer,
        jwksUrl: config.oidcJwksUrl,
        jwksFile: config.oidcJwksFile,
        keysDir: config.keysDir,
        legacyDataDir: config.dataDir,
        localDev: config.oidcLocalDev && config.nodeEnv !== 'production',
        algorithms: config.oidcAlgorithms,
        maxTokenAgeSeconds: config.oidcMaxTokenAgeS,
      },
    });
    deps = {
      config,
      dataSource,
      nats,
      rpc: new RpcClient(nats),
      resolver,
      limiter: new ChatTurnLimiter({ dataSource, turnsPerMinute: config.chatTurnsPerMinute }),
      authFailures: new AuthFailureLimiter({ dataSource, failuresPerMinute: config.authFailuresPerMinute }),
      analyticsQueries: new AnalyticsQueryLimiter({ dataSource, queriesPerMinute: config.analyticsQueriesPerMinute }),
      channel: new SessionChannel(nats, subjectsFor(config.natsPrefix).runs),
    };
  } catch (error) {
    await closeConnections(nats, dataSource);
    throw error;
  }

  let app: NestFastifyApplication | null = null;
  try {
    const adapter = new FastifyAdapter({
      bodyLimit: MAX_BODY_BYTES,
      trustProxy: false,
      logger: false,
      skipMiddie: true,
      routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
      frameworkErrors: answerFrameworkError(config.lifecycleRouteDeadlineMs),
      clientErrorHandler: clientErrorHandler(),
      // A request without Host is refused in the envelope by the admission hook, not by Node with an empty 400.
      http: { requireHostHeader: false },
      // While closing, a request that arrives on a kept-alive connection is still served (with
      // `Connection: close`) instead of refused 503: NATS and the pool stay open until HTTP has closed.
      return503OnClosing: false,
    });
    app = await NestFactory.create<NestFastifyApplication>(GatewayModule.forRoot(deps), adapter, {
      bodyParser: false,
      abortOnError: false,
      logger,
    });
    applyApiPrefix(app);
    serveUnknownExpectations(app.getHttpServer());
    installHttpDrain(app.getHttpAdapter().getInstance());
    await app.listen(config.gatewayPort, '0.0.0.0');
  } catch (error) {
    await app?.close().catch(() => undefined);
    await closeConnections(deps.nats, deps.dataSource);
    throw error;
  }

  const running = app;
  const port = (running.getHttpServer().address() as AddressInfo).port;
  let closing: Promise<void> | null = null;
  return {
    app: running,
    deps,
    port,
    close() {
      closing ??= (async () => {
        await running.close();
        await closeConnections(deps.nats, deps.dataSource);
        await stopTracing(); // sends the spans still buffered
      })();
      return closing;
    },
  };
}
