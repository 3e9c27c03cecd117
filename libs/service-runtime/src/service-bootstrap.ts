import type { NatsConnection } from '@nats-io/transport-node';
import {
  DynamicModule,
  Global,
  Inject,
  Injectable,
  INestMicroservice,
  Logger,
  Module,
  NestApplicationOptions,
  OnApplicationShutdown,
  Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestMicroservice } from '@nestjs/microservices';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { loadConfig, PlatformConfig, ServiceName, Subjects, subjectsFor } from '@interns/contracts';
import { openDatabase, PostgresOptions } from '@interns/database';
import { JsonLogger, NatsRequestContextInterceptor, startTracing, TracingShutdown } from '@interns/observability';
import {
  connectNats,
  DomainErrorRpcFilter,
  DrainingNatsServer,
  drainingNatsStrategy,
  LeanNatsHandler,
} from '@interns/messaging';
import { HealthModule } from './health.module';
import { installHttpDrain } from './http-drain';
import { installHttpMetrics } from './http-metrics';
import { observeLeanRequest } from './lean-request-observer';
import { NatsHandlerMetricsInterceptor } from './nats-handler-metrics.interceptor';
import { natsReadiness } from './nats-readiness';

/** What a service's root module is built from, and what every provider may inject. */
export interface ServiceDeps {
  service: ServiceName;
  config: PlatformConfig;
  subjects: Subjects;
  /** On the service's own schema, migrations applied when `config.runMigrations`. */
  dataSource: DataSource;
  /** The service's client connection: requests to other services, publishing, JetStream. */
  nc: NatsConnection;
}

/** Injection tokens; `DataSource` (the class) is a token too. */
export const SERVICE_DEPS = Symbol('SERVICE_DEPS');
export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

export interface ServiceBootstrapOptions {
  service: ServiceName;
  /** The PostgreSQL schema the service owns. */
  schema: string;
  migrations: PostgresOptions['migrations'];
  entities?: PostgresOptions['entities'];
  /**
   * The service's module, built after config load and connections, so handlers can be bound to
   * subjects that depend on NATS_PREFIX.
   */
  rootModule: (deps: ServiceDeps) => DynamicModule | Type<unknown>;
  /** Which port to listen on, e.g. `(config) => config.runsPort`. */
  port: (config: PlatformConfig) => number;
  /** Serve `@MessagePattern` handlers in NATS queue group `<service>` (hybrid app). Default true; the gateway passes false. */
  serveNats?: boolean;
  /** Last changes before listening (the gateway: global prefix, filters, hooks). */
  configure?: (app: NestFastifyApplication, deps: ServiceDeps) => void | Promise<void>;
  /**
   * Handlers served on the lean NATS path (LeanNatsHandler), read from the initialized app, e.g.
   * `(app) => app.get(LEAN_NATS_HANDLERS)`. Their subjects must not also be `@MessagePattern`s.
   */
  leanHandlers?: (app: NestFastifyApplication) => LeanNatsHandler<unknown>[];
  /** Defaults to `process.env`. */
  env?: Record<string, string | undefined>;
  /** Default true: SIGTERM/SIGINT close the app and exit 0. In-process tests pass false and call `close()`. */
  handleSignals?: boolean;
  /** Nest's logger option; default: the process's JSON logger at LOG_LEVEL (in-process tests pass false). */
  logger?: NestApplicationOptions['logger'];
}

export interface RunningService {
  app: NestFastifyApplication;
  deps: ServiceDeps;
  /** The bound HTTP port (differs from the configured one only when that was 0). */
  port: number;
  /** Closes HTTP, the NATS server connection, then drains the client connection and ends the pool. */
  close(): Promise<void>;
}

/**
 * Ends the connections opened before Nest existed. It sits in a global module, whose shutdown hooks run
 * after every other module's, so the service's own hooks can still use the pool and the connection.
 */
@Injectable()
class ServiceConnectionsCloser implements OnApplicationShutdown {
  constructor(@Inject(SERVICE_DEPS) private readonly deps: ServiceDeps) {}

  async onApplicationShutdown(): Promise<void> {
    await closeConnections(this.deps.nc, this.deps.dataSource);
  }
}

@Global()
@Module({})
class ServiceDepsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: ServiceDepsModule,
      providers: [
        { provide: SERVICE_DEPS, useValue: deps },
        { provide: DataSource, useValue: deps.dataSource },
        { provide: NATS_CONNECTION, useValue: deps.nc },
        ServiceConnectionsCloser,
        TracingShutdown,
      ],
      exports: [SERVICE_DEPS, DataSource, NATS_CONNECTION],
    };
  }
}

@Module({})
class ServiceAppModule {}

async function closeConnections(nc: NatsConnection | null, dataSource: DataSource | null): Promise<void> {
  if (nc && !nc.isClosed()) await nc.drain().catch(() => nc.close());
  if (dataSource?.isInitialized) await dataSource.destroy();
}

/**
 * The start-up every service shares: load config (CONTRACT section 11), open the service's schema
 * (migrating when RUN_MIGRATIONS is not false), connect to NATS, build a Fastify Nest app with
 * HealthModule, optionally serve NATS request/reply in queue group `<service>`, listen on 0.0.0.0 and
 * make SIGTERM/SIGINT close everything and exit 0.
 *
 * ```ts
 * await bootstrapService({ service: 'runs', schema: 'runs', migrations: RUNS_MIGRATIONS,
 *   port: (config) => config.runsPort, rootModule: (deps) => RunsModule.forRoot(deps) });
 * // gateway: serveNats: false, configure: (app) => app.setGlobalPrefix(...) keeping /health and /metrics outside
 * ```
 * Providers can inject `DataSource`, `NATS_CONNECTION` and `SERVICE_DEPS` (a global module provides them).
 */
export async function bootstrapService(options: ServiceBootstrapOptions): Promise<RunningService> {
  const { service } = options;
  const logger = new Logger(service);
  const config = loadConfig(options.env ?? process.env);
  // JSON lines from here on, unless the caller picked Nest's logger (in-process tests pass false).
  const appLogger = options.logger ?? JsonLogger.install({ service, level: config.logLevel });
  await startTracing({ exporter: config.tracesExporter, serviceName: config.otelServiceName ?? service, batchDelayMs: config.otelBatchDelayMs });
  let dataSource: DataSource | null = null;
  let nc: NatsConnection | null = null;
  try {
    dataSource = await openDatabase({
      url: config.databaseUrl,
      migrationsUrl: config.migrationsDatabaseUrl,
      schema: options.schema,
      migrations: options.migrations,
      entities: options.entities,
      applicationName: service,
      migrate: config.runMigrations,
      migrationsWaitMs: config.migrationsWaitMs,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
    });
    nc = await connectNats({ url: config.natsUrl, name: service, security: config });
    natsReadiness(nc);
  } catch (error) {
    await closeConnections(nc, dataSource);
    throw error;
  }

  const deps: ServiceDeps = { service, config, subjects: subjectsFor(config.natsPrefix), dataSource, nc };
  let server: INestMicroservice | undefined;
  let natsServer: DrainingNatsServer | undefined;
  const serverConnection = (): NatsConnection | null => {
    try {
      return server ? server.unwrap<NatsConnection>() : null;
    } catch {
      return null; // not listening yet, or closed
    }
  };
  const serveNats = options.serveNats ?? true;

  let app: NestFastifyApplication;
  try {
    const entry: DynamicModule = {
      module: ServiceAppModule,
      imports: [
        ServiceDepsModule.forRoot(deps),
        HealthModule.forRoot({
          service,
          dataSource,
          nats: () => (serveNats ? [deps.nc, serverConnection()] : deps.nc),
        }),
        options.rootModule(deps),
      ],
    };
    app = await NestFactory.create<NestFastifyApplication>(entry, new FastifyAdapter(), { logger: appLogger });
  } catch (error) {
    await closeConnections(nc, dataSource);
    throw error;
  }
  try {
    if (options.handleSignals ?? true) app.enableShutdownHooks(['SIGTERM', 'SIGINT'], { useProcessExit: true });
    if (serveNats) {
      // Handlers in flight at shutdown get as long as their requester waits for them.
      const drain = { handlerDrainTimeoutMs: config.lifecycleRouteDeadlineMs };
      // Deferred: handlers bind their exception filters when registered, so the filter must be set
      // first. The app's own init() runs the module hooks, hence the microservice must not run them again.
      const strategy = drainingNatsStrategy({ url: config.natsUrl, queue: service, security: config, ...drain });
      natsServer = strategy.strategy;
      server = app.connectMicroservice(strategy, { deferInitialization: true });
      server.useGlobalFilters(new DomainErrorRpcFilter());
      // Handlers run inside the request they serve: correlation id in every log line, trace span.
      server.useGlobalInterceptors(new NatsRequestContextInterceptor());
      server.useGlobalInterceptors(new NatsHandlerMetricsInterceptor());
      if (server instanceof NestMicroservice) server.setIsInitHookCalled(true);
    }
    // Before `configure`, so an early-answering hook added there is still counted.
    installHttpMetrics(app.getHttpAdapter().getInstance());
    installHttpDrain(app.getHttpAdapter().getInstance());
    await options.configure?.(app, deps);
    // Module hooks first: no request may reach a provider before its onModuleInit has run.
    await app.init();
    if (options.leanHandlers) natsServer?.serveLean(options.leanHandlers(app), observeLeanRequest);
    await app.startAllMicroservices();
    const ownConnection = serverConnection();
    if (ownConnection) {
      // The subscriptions are registered with the broker only once it has read them: a request sent by
      // another connection right after start must not meet "no responders".
      await ownConnection.flush();
      natsReadiness(ownConnection);
    }
    await app.listen(options.port(config), '0.0.0.0');
  } catch (error) {
    await app.close();
    throw error;
  }
  const port = (app.getHttpServer().address() as AddressInfo).port;
  // Not "ready": that is /health/ready's word (and `npm start`'s, which asks it).
  logger.log(`${service} started (HTTP port ${port}, NATS prefix "${config.natsPrefix}")`);
  return { app, deps, port, close: () => app.close() };
}

