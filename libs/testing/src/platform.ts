import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ExitResult, freePort, startServiceProcess, ServiceProcess } from './service-process';
import { getForStream, JsonAnswer, postForStream, SseResponse } from './sse-client';
import { createTestDatabase, TestDatabase, testNatsPrefix } from './test-database';
import { deleteTestStreams } from './test-streams';
import { detachMountsBelow } from './mounts';
import { sendAgainOnEarlyClose } from './http-call';

const run = promisify(execFile);
export const PLATFORM_SERVICES = ['lifecycle', 'egress', 'runs', 'analytics', 'webhooks', 'gateway'] as const;
export type PlatformService = (typeof PLATFORM_SERVICES)[number];

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  /** Parsed JSON when the answer is JSON, else the text. */
  body: T;
  text: string;
  raw: Buffer;
}

export interface ApiRequest {
  method?: string;
  /** Bearer credential. */
  token?: string;
  /** A JSON value (serialized with content-type application/json) or a raw string/Buffer. */
  json?: unknown;
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** The gateway to send to (`http://127.0.0.1:<port>`, e.g. a replica's `url`); default the first gateway. */
  baseUrl?: string;
}

/** What `rollService` reports: the process that took over and how the old one ended. */
export interface RolledService {
  replacement: ServiceProcess;
  previous: ServiceProcess;
  exit: ExitResult;
}

/**
 * The whole system as real processes (built dist/), on its own database, NATS prefix, DATA_DIR and ports,
 * for end-to-end tests. As under `npm start`, each service migrates its schema as the database owner and serves
 * as its own role (`admin db-setup`), so every end-to-end test also proves the roles' grants suffice. `env`
 * holds the owner's DATABASE_URL (the admin CLI's, and the tests' own queries). Everything, the roles included,
 * is torn down by `stop()`.
 */
export class Platform {
  private readonly processes = new Map<PlatformService, ServiceProcess>();
  /** Further replicas (e.g. a second runs service or gateway), each on its own port. */
  private readonly replicas: { service: PlatformService; process: ServiceProcess }[] = [];
  /** Each service's PostgreSQL role (`admin db-setup`). */
  private readonly serviceRoles = new Map<PlatformService, string>();

  private constructor(
    readonly database: TestDatabase,
    readonly env: Record<string, string>,
    private readonly ports: Record<PlatformService, number>,
    private readonly dataDir: string,
  ) {}

  static async start(options: { env?: Record<string, string>; services?: PlatformService[] } = {}): Promise<Platform> {
    const database = await createTestDatabase();
    const dataDir = await mkdtemp(join(tmpdir(), 'interns-e2e-'));
    // Searchable (not listable) by others: the shell sandbox runs as each intern's own uid and reaches its
    // workspace below DATA_DIR by path.
    await chmod(dataDir, 0o711);
    const ports = {
      lifecycle: await freePort(),
      runs: await freePort(),
      analytics: await freePort(),
      webhooks: await freePort(),
      egress: await freePort(),
      gateway: await freePort(),
    };
    const env: Record<string, string> = {
      DATABASE_URL: database.url,
      NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
      NATS_PREFIX: testNatsPrefix(),
      DATA_DIR: dataDir,
      GATEWAY_PORT: String(ports.gateway),
      LIFECYCLE_PORT: String(ports.lifecycle),
      RUNS_PORT: String(ports.runs),
      ANALYTICS_PORT: String(ports.analytics),
      WEBHOOKS_PORT: String(ports.webhooks),
      EGRESS_PORT: String(ports.egress),
      PUBLIC_HOST: 'localhost',
      // The tests mint tokens with `admin oauth-token`, i.e. the local development issuer.
      OIDC_LOCAL_DEV: 'true',
      ...options.env,
    };
    const platform = new Platform(database, env, ports, dataDir);
    try {
      // As `npm start` does: the services' roles, created by the owner (env's DATABASE_URL) with the real command.
      const setup = await platform.admin<{ roles: { service: PlatformService; role: string }[] }>('db-setup');
      for (const { service, role } of setup.roles) platform.serviceRoles.set(service, role);
    } catch (error) {
      await platform.stop();
      throw error;
    }
    // Services migrate their own schemas; starting them in parallel also proves the migration lock. Every start
    // is awaited before a failure is reported, so the stop below also ends services that were still starting.
    const started = await Promise.allSettled((options.services ?? PLATFORM_SERVICES).map((service) => platform.startService(service)));
    const failed = started.find((result) => result.status === 'rejected');
    if (failed !== undefined) {
      await platform.stop();
      throw failed.reason;
    }
    return platform;
  }

  /** The first gateway (after `rollService('gateway')`, the one that replaced it). */
  get gatewayUrl(): string {
    return `http://127.0.0.1:${this.ports.gateway}`;
  }

  /** Every gateway started and not stopped: the first and its replicas (what a Service would balance over). */
  get gatewayUrls(): string[] {
    return this.running('gateway').map((gateway) => gateway.url);
  }

  /** The processes of `service` started and not stopped, the first one first. */
  running(service: PlatformService): ServiceProcess[] {
    const first = this.processes.get(service);
    const replicas = this.replicas.filter((replica) => replica.service === service).map((replica) => replica.process);
    return [...(first ? [first] : []), ...replicas];
  }

  process(service: PlatformService): ServiceProcess {
    const found = this.processes.get(service);
    if (!found) throw new Error(`${service} is not running`);
    return found;
  }

  async startService(service: PlatformService): Promise<ServiceProcess> {
    const started = await this.startProcess(service, this.ports[service]);
    this.processes.set(service, started);
    return started;
  }

  /**
   * Starts one more replica of a service beside the first (same database, prefix and DATA_DIR) on a port of
   * its own; a gateway replica is addressed through its `url` (`ApiRequest.baseUrl`).
   */
  async startReplica(service: PlatformService): Promise<ServiceProcess> {
    const started = await this.startProcess(service, await freePort());
    this.replicas.push({ service, process: started });
    return started;
  }

  /**
   * Replaces the first process of `service` the way a Deployment rolls a pod (max surge 1, max unavailable 0):
   * starts a replacement on a new port, waits until it is ready, calls `beforeStop` (for a gateway: take the
   * old one out of the client's rotation, as an endpoint leaves a Service), then sends SIGTERM to the old
   * process and waits for it to exit. The replacement becomes the first process of the service.
   */
  async rollService(
    service: PlatformService,
    options: { beforeStop?: (previous: ServiceProcess, replacement: ServiceProcess) => void | Promise<void> } = {},
  ): Promise<RolledService> {
    const previous = this.process(service);
    const port = await freePort();
    const replacement = await this.startProcess(service, port);
    this.processes.set(service, replacement);
    this.ports[service] = port;
    this.replicas.push({ service, process: previous });
    await options.beforeStop?.(previous, replacement);
    const exit = await previous.stop('SIGTERM');
    this.replicas.splice(this.replicas.findIndex((replica) => replica.process === previous), 1);
    return { replacement, previous, exit };
  }

  private async startProcess(service: PlatformService, port: number): Promise<ServiceProcess> {
    // File bodies straight from the gateway, as `npm start` moves them, on a port of each runs process's own;
    // FILE_TRANSFER_PORT '0' in the env selects the NATS path.
    const fileTransfer: Record<string, string> = service === 'runs' && this.env.FILE_TRANSFER_PORT !== '0' ? { FILE_TRANSFER_PORT: String(await freePort()) } : {};
    return startServiceProcess({
      entry: resolve('dist/apps', service, 'src/main.js'),
      port,
      env: {
        ...this.env,
        // The service's own role to serve; the owner (the platform's DATABASE_URL) to migrate.
        DATABASE_URL: this.serviceDatabaseUrl(service),
        MIGRATIONS_DATABASE_URL: this.env.MIGRATIONS_DATABASE_URL ?? this.env.DATABASE_URL,
        [`${service.toUpperCase()}_PORT`]: String(port),
        ...fileTransfer,
      },
    });
  }

  /** The URL `service` connects with: the platform's database as the service's own role (trust authentication). */
  serviceDatabaseUrl(service: PlatformService): string {
    const role = this.serviceRoles.get(service);
    if (role === undefined) throw new Error(`no database role for ${service}: admin db-setup did not report one`);
    const url = new URL(this.env.DATABASE_URL);
    url.username = role;
    url.password = '';
    return url.toString();
  }

  /** POSTs a chat or invoke body to the gateway; an event stream comes back as an SseResponse. */
  post(path: string, token: string, json: unknown, headers?: Record<string, string>): Promise<SseResponse | JsonAnswer> {
    return postForStream(`${this.gatewayUrl}${path}`, { token, json, headers });
  }

  /** GET of an event stream (a run's), followed as it arrives; JSON when the gateway refuses. */
  getStream(path: string, token: string, headers?: Record<string, string>): Promise<SseResponse | JsonAnswer> {
    return getForStream(`${this.gatewayUrl}${path}`, { token, headers });
  }

  async stopService(service: PlatformService, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const running = this.processes.get(service);
    if (!running) return;
    await running.stop(signal);
    this.processes.delete(service);
  }

  /**
   * Runs the admin command with this platform's environment; resolves to its JSON output. In DATA_DIR, where no
   * `.env` is: a developer's `.env` in the clone must not reach the tests.
   */
  async admin<T = unknown>(...args: string[]): Promise<T> {
    const env: NodeJS.ProcessEnv = { ...process.env, ...this.env };
    delete env.NODE_OPTIONS;
    const { stdout } = await run(process.execPath, [resolve('dist/apps/admin/src/main.js'), ...args], { env, cwd: this.dataDir });
    return JSON.parse(stdout) as T;
  }

  async applyIdentities(file: unknown): Promise<void> {
    const path = join(this.dataDir, `identities-${Date.now()}-${Math.random()}.json`);
    await writeFile(path, JSON.stringify(file));
    await this.admin('apply', path);
  }

  /**
   * One HTTP request to the gateway (node:http, so a Host header can be set as a client would), sent again
   * when the server's early close (413) lost the answer; see `call`.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  api<T = any>(path: string, request: ApiRequest = {}): Promise<ApiResponse<T>> {
    return sendAgainOnEarlyClose(() => this.apiOnce<T>(path, request));
  }

  private apiOnce<T>(path: string, request: ApiRequest): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...request.headers };
    if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`;
    let body: string | Buffer | undefined;
    if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers['content-type'] ??= 'application/json';
    } else if (request.raw !== undefined) {
      body = request.raw;
    }
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise((done, fail) => {
      let answered = false;
      const outgoing = httpRequest(
        `${request.baseUrl ?? this.gatewayUrl}${path}`,
        { method: request.method ?? (body === undefined ? 'GET' : 'POST'), headers },
        (incoming) => {
          answered = true;
          const chunks: Buffer[] = [];
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
          incoming.on('error', fail);
          incoming.on('end', () => {
            const raw = Buffer.concat(chunks);
            const text = raw.toString('utf8');
            const responseHeaders = new Headers();
            for (const [name, value] of Object.entries(incoming.headers)) {
              if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
            }
            const isJson = (responseHeaders.get('content-type') ?? '').includes('application/json');
            done({ status: incoming.statusCode ?? 0, headers: responseHeaders, body: (isJson ? JSON.parse(text) : text) as T, text, raw });
          });
        },
      );
      outgoing.on('error', (error) => answered || fail(error));
      outgoing.end(body);
    });
  }

  async stop(): Promise<void> {
    const running = [...this.processes.values(), ...this.replicas.splice(0).map((replica) => replica.process)];
    await Promise.all(running.map((p) => p.stop('SIGTERM').catch(() => p.kill())));
    this.processes.clear();
    await deleteTestStreams(this.env.NATS_PREFIX, this.env.NATS_URL).catch(() => undefined);
    await this.database.drop();
    await detachMountsBelow(this.dataDir);
    await rm(this.dataDir, { recursive: true, force: true });
  }
}
