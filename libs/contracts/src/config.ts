// Longer than 300 lines on purpose: every setting of every service is read and checked here, in one place, so the README's table and the code cannot drift.
import { SERVICE_NAMES, type ServiceName } from './service-names';

/**
 * Environment names and defaults of CONTRACT sections 10 and 11, read once per process: every setting, its default
 * and its meaning in one place (the README table is checked against it).
 */
export interface PlatformConfig {
  /** DATABASE_URL: what this process connects with; a service's own role (`admin db-setup`), the owner for admin and migrations. */
  databaseUrl: string;
  /**
   * MIGRATIONS_DATABASE_URL: the database owner, which applies migrations (RUN_MIGRATIONS=true, `main.js migrate`) and
   * runs `admin db-setup`; defaults to DATABASE_URL (one URL for everything, as before service roles).
   */
  migrationsDatabaseUrl: string;
  /** `<SERVICE>_DATABASE_PASSWORD`: the password `admin db-setup` gives each service's role; null: left as it is. */
  databaseRolePasswords: Record<ServiceName, string | null>;
  natsUrl: string;
  natsPrefix: string;
  /** NATS_CREDS_DIR: each process authenticates with `<dir>/<process>.creds` (from `admin nats-setup`); null: anonymous. */
  natsCredsDir: string | null;
  /** NATS_TLS_CA: a CA certificate file; set, connections use TLS and trust this CA. */
  natsTlsCa: string | null;
  gatewayPort: number;
  lifecyclePort: number;
  runsPort: number;
  analyticsPort: number;
  /** The webhooks service's health and metrics port (CONTRACT section 13). */
  webhooksPort: number;
  /** The egress proxy's health and metrics port (interface section 19). */
  egressPort: number;
  publicHost: string;
  internDomain: string;
  /**
   * INTERN_ORIGIN: where clients reach an intern's door, `{hostname}` standing for its hostname; what daemon access
   * answers as `origin` (CONTRACT section 20). `npm start` sets `http://{hostname}:<GATEWAY_PORT>`.
   */
  internOrigin: string;
  dataDir: string;
  /** Where deleted interns' workspace archives go; defaults to `<DATA_DIR>/archives`. */
  archiveDir: string;
  /** ARCHIVE_TIMEOUT_MS: a workspace archive not written by then fails the teardown (`workspace_archive_failed`). */
  archiveTimeoutMs: number;
  /** Generated private keys (`daemon-signing/`, `dev-oidc/`; directories 0700, files 0600), never under a workspace; defaults to `<DATA_DIR>/keys`. */
  keysDir: string;
  defaultModel: string;
  /** An OpenAI-compatible provider, which serves every model not authored `local`; null when not configured. */
  modelApiBaseUrl: string | null;
  modelApiKey: string | null;
  /** Route deadline of lifecycle and daemon routes. */
  lifecycleRouteDeadlineMs: number;
  /** Route deadline of invoke and of chat before its stream starts. */
  runRouteDeadlineMs: number;
  /** PostgreSQL `statement_timeout` of every service pool; below `lifecycleRouteDeadlineMs`. */
  databaseStatementTimeoutMs: number;
  /**
   * How long the gateway trusts a cached credential lookup (bounds how late a revocation bites), and runs a start's
   * cached intern lookup when no notice of a change dropped it first.
   */
  authCacheTtlMs: number;
  oidcIssuer: string | null;
  oidcJwksUrl: string | null;
  oidcJwksFile: string | null;
  /** OIDC_LOCAL_DEV=true: trust the local development issuer (`admin oauth-token`) when no external one is set; refused in production. */
  oidcLocalDev: boolean;
  /** OIDC_ALGORITHMS: the JWS algorithms an external issuer's tokens may use (comma separated). */
  oidcAlgorithms: string[];
  /** OIDC_MAX_TOKEN_AGE_S: the longest lifetime (exp - iat) and age (now - iat) of an access token. */
  oidcMaxTokenAgeS: number;
  /** AUTH_FAILURES_PER_MINUTE: 401s one client address may collect in a minute before it is answered 429. */
  authFailuresPerMinute: number;
  /** TRUST_FORWARDED_FOR=true: the client address is the last X-Forwarded-For hop (only behind a proxy that sets it). */
  trustForwardedFor: boolean;
  /** Whether a service applies its own migrations at start (true for `npm start`, false under Kubernetes). */
  runMigrations: boolean;
  /** With RUN_MIGRATIONS=false: how long a service waits at start for its schema's migrations (the migrate step), then exits 1. */
  migrationsWaitMs: number;
  /** Interns provisioning at once; further provision requests wait in `queued`. */
  provisionConcurrency: number;
  /** PROVISION_CONCURRENCY_PER_WORKSPACE: of those slots (and of the teardown steps in flight), at most this many for one workspace. */
  provisionConcurrencyPerWorkspace: number;
  /** MAX_INTERNS_PER_WORKSPACE: interns not torn down one workspace may hold; create beyond: 409 `limit_reached`. */
  maxInternsPerWorkspace: number;
  /** ANALYTICS_QUERIES_PER_MINUTE: analytics queries per organization per minute; beyond: 429. */
  analyticsQueriesPerMinute: number;
  /** A pause before each provisioning step, for demonstrations only (0: none). */
  provisionStepDelayMs: number;
  /** How long provisioning step 4 waits for a healthy runtime before the intern fails. */
  runtimeHealthTimeoutMs: number;
  /** Refusals of a runtime stop (suspended or failed intern) after which the failure is recorded and retries end. */
  runtimeStopAttempts: number;
  /** How long a `service.provide_input` question stays open; then the run is cancelled. */
  interactionDeadlineMs: number;
  /** Silence on a chat stream after which the gateway writes a `: keepalive` comment. */
  keepaliveIntervalMs: number;
  /** How long a run may go on (chat and invoke), questions' waits included. */
  executionDeadlineMs: number;
  /** How long a run's chunks stay readable after it ended (`GET .../runs/{id}/stream`); later 410 `run_expired`. */
  runReplayRetentionMs: number;
  /** How often one runs replica looks for runs whose owner died, and ends them `failed`. */
  runReconcileIntervalMs: number;
  /**
   * TRANSCRIPT_RETENTION_MS: how long a run's transcript (prompts, outputs, tool calls and results, questions and
   * answers, its chunks) is kept after the run ended; then it is purged and the run keeps only its metadata.
   */
  transcriptRetentionMs: number;
  /** Run streams (`GET .../runs/{id}/stream`) one caller may hold open on one gateway; beyond: 429 `rate_limited`. */
  runStreamReadersPerCaller: number;
  /**
   * EVENTS_REPLAY_RETENTION_MS: how long the workspace event stream (`GET /events`) can resume after an event
   * (`Last-Event-ID`); older: 410 `events_expired`. At most JETSTREAM_MAX_AGE_MS, which the source streams keep.
   */
  eventsReplayRetentionMs: number;
  /** EVENTS_REPLAY_MAX_BYTES: the events one gateway holds for resuming, at most; the oldest go first past it. */
  eventsReplayMaxBytes: number;
  /** EVENT_STREAMS_PER_CALLER: workspace event streams one caller may hold open on one gateway; beyond: 429 `rate_limited`. */
  eventStreamsPerCaller: number;
  /** Chat prompts, invokes and signings per caller per intern per minute. */
  chatTurnsPerMinute: number;
  /** Concurrent runs on one intern; beyond: 409 `busy`. */
  maxRunsPerIntern: number;
  /** TERMINALS_PER_INTERN: terminals attached to one intern at once, across replicas; beyond: 409 `limit_reached`. */
  terminalsPerIntern: number;
  /** TERMINAL_IDLE_MS: a terminal without input or output this long is closed. */
  terminalIdleMs: number;
  /**
   * FILE_TRANSFER_PORT: the runs service's own port for file bodies straight from the gateway (no broker between);
   * 0: off, bodies go over NATS in chunks. `npm start` sets 8086.
   */
  fileTransferPort: number;
  /** FILE_TRANSFER_HOST: the address that port binds to (127.0.0.1; in Kubernetes 0.0.0.0). */
  fileTransferHost: string;
  /** FILE_TRANSFER_ADVERTISED_HOST: how the gateway reaches that port (the pod IP in Kubernetes); defaults to FILE_TRANSFER_HOST. */
  fileTransferAdvertisedHost: string;
  /** FILE_TRANSFER_STALL_MS: a file transfer that moves no byte for this long is aborted on both sides. */
  fileTransferStallMs: number;
  /** FILE_TRANSFERS_PER_REPLICA: downloads and uploads one runs replica serves at once; beyond: 409 `limit_reached`. */
  fileTransfersPerReplica: number;
  /** How often a run's owner sends a heartbeat on a quiet stream; the relay declares the link severed after 3 missed. */
  streamHeartbeatMs: number;
  /** Bytes the gateway holds for a chat client that does not read; beyond, the stream is cut and the run cancelled. */
  streamClientBufferBytes: number;
  /** The shell tool: how long a command may run, and how much of its output is kept. */
  shellTimeoutMs: number;
  shellOutputLimitBytes: number;
  /** RUNTIME_SANDBOX: `bwrap` (default) runs every shell command in a bubblewrap sandbox; `off` is for development only. */
  runtimeSandbox: RuntimeSandboxName;
  /**
   * RUNTIME_NETWORK: what a sandboxed command may reach. `egress` (default): only the egress proxy, through a unix
   * socket bound into its sandbox (interface section 19); `none`: no network at all.
   */
  runtimeNetwork: RuntimeNetworkName;
  /** Processes one intern's sandboxed commands may have at once (RLIMIT_NPROC of the intern's own uid). */
  shellMaxProcesses: number;
  /** Address space of each sandboxed process (RLIMIT_AS). */
  shellMemoryBytes: number;
  /** INTERN_MEMORY_BYTES: RAM of all an intern's sandboxed processes and their tmpfs together (its cgroup). */
  internMemoryBytes: number;
  /** INTERN_CPU_MILLICORES: CPU of all an intern's sandboxed processes together (its cgroup; 1000 = one core). */
  internCpuMillicores: number;
  /** Size of the private `/tmp` (and of `/dev/shm`) of a sandboxed command, in RAM. */
  shellTmpBytes: number;
  /** Bytes an intern's workspace may hold, all files together; writing past it fails inside the sandbox. */
  workspaceQuotaBytes: number;
  /** FILE_UPLOAD_MAX_BYTES: the largest body a file upload may have (interface section 21); larger: 413. */
  fileUploadMaxBytes: number;
  /** WORKSPACE_QUOTA_INODES: files and directories an intern's workspace may hold (exact with `WORKSPACE_DISK=image`). */
  workspaceQuotaInodes: number;
  /**
   * WORKSPACE_DISK: `image` (default with the sandbox) gives each intern a filesystem image of its own, mounted
   * as its workspace, so the quota is exact; `directory` (default with RUNTIME_SANDBOX=off) a plain directory,
   * where the quota bounds each file a command writes.
   */
  workspaceDisk: WorkspaceDiskName;
  /** First host uid/gid of intern sandboxes: intern n (in allocation order) runs as SANDBOX_UID_BASE + n. */
  sandboxUidBase: number;
  /** Tool calls one run may make; the next one ends the run with finish `length`. */
  maxToolCallsPerRun: number;
  /** Bytes of one stored event's JSON (data and metadata); larger text is cut with a marker before it is stored. */
  maxEventBytes: number;
  /** Limits of the JetStream streams the outbox relays create: oldest messages go first past either. */
  jetstreamMaxAgeMs: number;
  jetstreamMaxBytes: number;
  /** Replicas of each relay stream; 3 needs a NATS cluster of at least 3 nodes. */
  jetstreamReplicas: number;
  /** NODE_ENV; `production` refuses development-only settings (RUNTIME_SANDBOX=off). */
  nodeEnv: string;
  /** ADMIN_RESET: `on` (default) lets `admin reset` drop this system's database and streams outside production; `off` refuses it. */
  adminReset: AdminResetName;
  /** How long the runs service waits for an OpenAI-compatible provider to start answering. */
  modelRequestTimeoutMs: number;
  /** How long a revealed daemon token stays valid (it dies earlier when its intern is suspended or deleted). */
  daemonTokenTtlMs: number;
  /** The daemon request-signing key (Ed25519, PKCS#8 PEM); null: generated once under `<KEYS_DIR>/daemon-signing/`. */
  daemonSigningKey: string | null;
  /** During a rotation: the key DAEMON_SIGNING_KEY replaced, still published in the JWKS, never used to sign. */
  daemonSigningKeyPrevious: string | null;
  /** LOG_LEVEL: the least severe level written (JSON lines on stdout). */
  logLevel: LogLevelName;
  /** OTEL_TRACES_EXPORTER: where trace spans go; `none` keeps tracing off (a no-op tracer). */
  tracesExporter: TracesExporterName;
  /** OTEL_SERVICE_NAME; null: each process names itself (`gateway`, `lifecycle`, ...). */
  otelServiceName: string | null;
  /** OTEL_BSP_SCHEDULE_DELAY: how long finished spans are batched before they are sent (ms). */
  otelBatchDelayMs: number;
  /** Webhooks (CONTRACT section 13): how long one delivery attempt may take, connecting included; else it failed. */
  webhookTimeoutMs: number;
  /** Waits before each retry of a failed delivery (ms); after the last one the delivery is `failed`. */
  webhookRetryScheduleMs: number[];
  /** WEBHOOK_ALLOW_INSECURE=true (development and tests only): `http://` and any address are accepted; refused in production. */
  webhookAllowInsecure: boolean;
  /** WEBHOOK_SECRETS_KEY: 32 bytes, base64, sealing endpoint secrets at rest; null: a key generated under KEYS_DIR. */
  webhookSecretsKey: string | null;
  /** WEBHOOK_SECRETS_KEY_PREVIOUS: the key being rotated out; what it sealed is sealed again at start. */
  webhookSecretsKeyPrevious: string | null;
  /**
   * VAULT_MASTER_KEY: the vault's private key (a JWK of an X25519 key), which opens stored secret values; only the
   * egress proxy needs it. null: not given (development generates a key pair under KEYS_DIR).
   */
  vaultMasterKey: string | null;
  /** VAULT_PUBLIC_KEY: the vault's public key (a JWK), which seals values: what lifecycle needs in production. */
  vaultPublicKey: string | null;
  /** Endpoints one workspace may have; bounds the delivery work one caller can ask for. */
  webhookEndpointsPerWorkspace: number;
  /** EGRESS_SOCKET_DIR: where the egress proxy's per-command unix sockets are made (shared by runs and egress); `<DATA_DIR>/egress`. */
  egressSocketDir: string;
  /** EGRESS_PORTS as given (the egress service parses and checks it): the ports a request may go to; unset: 443 and 80. */
  egressPorts: string | null;
  /** EGRESS_RESOLVE as given (development and tests; the egress service parses it): `host:address,...`. */
  egressResolve: string | null;
  /** EGRESS_ALLOW_PRIVATE as given (`true`/`false`; the egress service checks it, refusing `true` in production). */
  egressAllowPrivate: string | null;
  /** EGRESS_BYTES_PER_RUN: bytes in and out one run may move through the proxy (1 GiB). */
  egressBytesPerRun: number;
  /** EGRESS_CONNECTIONS_PER_INTERN: connections to the proxy one intern may hold open at once (64). */
  egressConnectionsPerIntern: number;
  /** EGRESS_LOG_RETENTION_MS: how long an egress log entry is kept (30 days). */
  egressLogRetentionMs: number;
  /**
   * CONSOLE_DIR: the web console's built files (`vite build`), which the gateway serves at `/console/` (interface
   * section 23); null: `dist/console` beside the gateway's own build.
   */
  consoleDir: string | null;
  /** Deliveries one webhooks replica attempts at once. */
  webhookDeliveryConcurrency: number;
}

/** LOG_LEVEL values, most severe first; `log` and `verbose` are accepted as Nest's names for `info` and `trace`. */
export const LOG_LEVEL_NAMES = ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevelName = (typeof LOG_LEVEL_NAMES)[number];
const LOG_LEVEL_ALIASES: Record<string, LogLevelName> = { log: 'info', verbose: 'trace' };

/** WORKSPACE_DISK values: `image` (a loop-mounted filesystem per intern: exact quota) or `directory`. */
export const WORKSPACE_DISK_NAMES = ['image', 'directory'] as const;
export type WorkspaceDiskName = (typeof WORKSPACE_DISK_NAMES)[number];

/** RUNTIME_SANDBOX values: `bwrap` isolates every shell command; `off` (development only) runs it as the service's user. */
export const RUNTIME_SANDBOX_NAMES = ['bwrap', 'off'] as const;
export type RuntimeSandboxName = (typeof RUNTIME_SANDBOX_NAMES)[number];

/** RUNTIME_NETWORK values: `egress` (the proxy is a sandbox's only way out) or `none` (no network at all). */
export const RUNTIME_NETWORK_NAMES = ['egress', 'none'] as const;
export type RuntimeNetworkName = (typeof RUNTIME_NETWORK_NAMES)[number];

/** ADMIN_RESET values: whether `admin reset` may run here (never with NODE_ENV=production). */
export const ADMIN_RESET_NAMES = ['on', 'off'] as const;
export type AdminResetName = (typeof ADMIN_RESET_NAMES)[number];

/** OTEL_TRACES_EXPORTER values: `otlp` is OTLP over HTTP (JSON), `console` prints finished spans. */
export const TRACES_EXPORTER_NAMES = ['none', 'otlp', 'console'] as const;
export type TracesExporterName = (typeof TRACES_EXPORTER_NAMES)[number];

/** CONTRACT section 22: a run's transcript is kept 30 days after the run ended. */
export const DEFAULT_TRANSCRIPT_RETENTION_MS = 2592000000;

/**
 * How often a retention sweep looks for transcripts past TRANSCRIPT_RETENTION_MS: a tenth of the retention, at most
 * a minute (at least 100 ms), so a transcript outlives its retention by at most that (30 days: a minute late at most).
 */
export function transcriptSweepIntervalMs(retentionMs: number): number {
  return Math.max(100, Math.min(60_000, Math.floor(retentionMs / 10)));
}

/** CONTRACT section 16: no event is larger (256 KiB, a quarter of NATS's default max payload). */
export const DEFAULT_MAX_EVENT_BYTES = 262144;

type Env = Record<string, string | undefined>;

/** The variable holding the password `admin db-setup` sets on `service`'s role, e.g. `RUNS_DATABASE_PASSWORD`. */
export function databasePasswordVariable(service: ServiceName): string {
  return `${service.toUpperCase()}_DATABASE_PASSWORD`;
}

function intFrom(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return Number(raw);
}

function positiveIntFrom(env: Env, name: string, fallback: number): number {
  const value = intFrom(env, name, fallback);
  if (value < 1) throw new Error(`${name} must be at least 1, got "${env[name]}"`);
  return value;
}

function stringFrom(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T, aliases: Record<string, T> = {}): T {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  const value = aliases[raw] ?? raw;
  if (!(allowed as readonly string[]).includes(value)) throw new Error(`${name} must be one of ${allowed.join(', ')}, got "${env[name]}"`);
  return value as T;
}

function listFrom(env: Env, name: string, fallback: readonly string[]): string[] {
  const items = (env[name] ?? '').split(',').map((item) => item.trim()).filter((item) => item !== '');
  return items.length === 0 ? [...fallback] : items;
}

function optionalFrom(env: Env, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : raw;
}

/**
 * DATABASE_STATEMENT_TIMEOUT_MS: a statement must give up before the route that waits on it, so a hung
 * PostgreSQL answers 408/500 and frees the connection. Unset: 5000, or half the lifecycle route deadline
 * when that is shorter.
 */
function statementTimeoutFrom(env: Env, lifecycleRouteDeadlineMs: number): number {
  const value = positiveIntFrom(env, 'DATABASE_STATEMENT_TIMEOUT_MS', Math.max(1, Math.min(5000, Math.floor(lifecycleRouteDeadlineMs / 2))));
  if (value >= lifecycleRouteDeadlineMs) {
    throw new Error(
      `DATABASE_STATEMENT_TIMEOUT_MS (${value}) must be below LIFECYCLE_ROUTE_DEADLINE_MS (${lifecycleRouteDeadlineMs})`,
    );
  }
  return value;
}

/** The database a PostgreSQL URL names (its path), or null when it is no URL; never echoes the URL (it may hold a password). */
function databaseNameOf(url: string): string | null {
  try {
    const parsed = new URL(url);
    // Anything else parses too ("user:password@host" as scheme and path): never read a name, or a password, from it.
    if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') return null;
    return decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  } catch {
    return null;
  }
}

/**
 * MIGRATIONS_DATABASE_URL must name the database DATABASE_URL names: a service migrating one database and serving
 * from another would wait for its migrations forever.
 */
function migrationsDatabaseUrlFrom(env: Env, databaseUrl: string): string {
  const migrationsUrl = stringFrom(env, 'MIGRATIONS_DATABASE_URL', databaseUrl);
  if (migrationsUrl === databaseUrl) return migrationsUrl;
  const served = databaseNameOf(databaseUrl);
  const migrated = databaseNameOf(migrationsUrl);
  if (migrated === null) throw new Error('MIGRATIONS_DATABASE_URL must be a postgres:// URL');
  if (served === null) throw new Error('DATABASE_URL must be a postgres:// URL');
  if (migrated !== served) {
    throw new Error(`MIGRATIONS_DATABASE_URL names database "${migrated}" but DATABASE_URL names "${served}": both must name the same database`);
  }
  return migrationsUrl;
}

export function loadConfig(env: Env): PlatformConfig {
  const dataDir = stringFrom(env, 'DATA_DIR', './.data');
  const lifecycleRouteDeadlineMs = intFrom(env, 'LIFECYCLE_ROUTE_DEADLINE_MS', 10000);
  const runtimeSandbox = oneOf(env, 'RUNTIME_SANDBOX', RUNTIME_SANDBOX_NAMES, 'bwrap');
  const databaseUrl = stringFrom(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/interns');
  return {
    databaseUrl,
    migrationsDatabaseUrl: migrationsDatabaseUrlFrom(env, databaseUrl),
    databaseRolePasswords: Object.fromEntries(
      SERVICE_NAMES.map((service) => [service, optionalFrom(env, databasePasswordVariable(service))]),
    ) as Record<ServiceName, string | null>,
    natsUrl: stringFrom(env, 'NATS_URL', 'nats://127.0.0.1:4222'),
    natsPrefix: stringFrom(env, 'NATS_PREFIX', 'interns'),
    natsCredsDir: optionalFrom(env, 'NATS_CREDS_DIR'),
    natsTlsCa: optionalFrom(env, 'NATS_TLS_CA'),
    gatewayPort: intFrom(env, 'GATEWAY_PORT', 8080),
    lifecyclePort: intFrom(env, 'LIFECYCLE_PORT', 8081),
    runsPort: intFrom(env, 'RUNS_PORT', 8082),
    analyticsPort: intFrom(env, 'ANALYTICS_PORT', 8083),
    webhooksPort: intFrom(env, 'WEBHOOKS_PORT', 8084),
    egressPort: intFrom(env, 'EGRESS_PORT', 8085),
    publicHost: stringFrom(env, 'PUBLIC_HOST', 'localhost'),
    internDomain: stringFrom(env, 'INTERN_DOMAIN', 'interns.localhost'),
    internOrigin: internOriginFrom(env),
    dataDir,
    archiveDir: stringFrom(env, 'ARCHIVE_DIR', `${dataDir.replace(/\/+$/, '')}/archives`),
    archiveTimeoutMs: positiveIntFrom(env, 'ARCHIVE_TIMEOUT_MS', 600000),
    keysDir: stringFrom(env, 'KEYS_DIR', `${dataDir.replace(/\/+$/, '')}/keys`),
    defaultModel: stringFrom(env, 'DEFAULT_MODEL', 'local/scripted'),
    modelApiBaseUrl: optionalFrom(env, 'MODEL_API_BASE_URL'),
    modelApiKey: optionalFrom(env, 'MODEL_API_KEY'),
    lifecycleRouteDeadlineMs,
    runRouteDeadlineMs: intFrom(env, 'RUN_ROUTE_DEADLINE_MS', 60000),
    databaseStatementTimeoutMs: statementTimeoutFrom(env, lifecycleRouteDeadlineMs),
    authCacheTtlMs: intFrom(env, 'AUTH_CACHE_TTL_MS', 2000),
    oidcIssuer: optionalFrom(env, 'OIDC_ISSUER'),
    oidcJwksUrl: optionalFrom(env, 'OIDC_JWKS_URL'),
    oidcJwksFile: optionalFrom(env, 'OIDC_JWKS_FILE'),
    oidcLocalDev: stringFrom(env, 'OIDC_LOCAL_DEV', 'false') === 'true',
    oidcAlgorithms: listFrom(env, 'OIDC_ALGORITHMS', DEFAULT_OIDC_ALGORITHMS),
    oidcMaxTokenAgeS: positiveIntFrom(env, 'OIDC_MAX_TOKEN_AGE_S', DEFAULT_OIDC_MAX_TOKEN_AGE_S),
    authFailuresPerMinute: positiveIntFrom(env, 'AUTH_FAILURES_PER_MINUTE', 120),
    trustForwardedFor: stringFrom(env, 'TRUST_FORWARDED_FOR', 'false') === 'true',
    runMigrations: stringFrom(env, 'RUN_MIGRATIONS', 'true') !== 'false',
    migrationsWaitMs: intFrom(env, 'MIGRATIONS_WAIT_MS', 300000),
    provisionConcurrency: positiveIntFrom(env, 'PROVISION_CONCURRENCY', 4),
    provisionConcurrencyPerWorkspace: positiveIntFrom(env, 'PROVISION_CONCURRENCY_PER_WORKSPACE', 2),
    maxInternsPerWorkspace: positiveIntFrom(env, 'MAX_INTERNS_PER_WORKSPACE', 100),
    analyticsQueriesPerMinute: positiveIntFrom(env, 'ANALYTICS_QUERIES_PER_MINUTE', 60),
    provisionStepDelayMs: intFrom(env, 'PROVISION_STEP_DELAY_MS', 0),
    runtimeHealthTimeoutMs: intFrom(env, 'RUNTIME_HEALTH_TIMEOUT_MS', 30000),
    runtimeStopAttempts: positiveIntFrom(env, 'RUNTIME_STOP_ATTEMPTS', 5),
    interactionDeadlineMs: positiveIntFrom(env, 'INTERACTION_DEADLINE_MS', 300000),
    keepaliveIntervalMs: positiveIntFrom(env, 'KEEPALIVE_INTERVAL_MS', 30000),
    executionDeadlineMs: positiveIntFrom(env, 'EXECUTION_DEADLINE_MS', 3600000),
    runReplayRetentionMs: positiveIntFrom(env, 'RUN_REPLAY_RETENTION_MS', 86400000),
    runReconcileIntervalMs: positiveIntFrom(env, 'RUN_RECONCILE_INTERVAL_MS', 10000),
    transcriptRetentionMs: positiveIntFrom(env, 'TRANSCRIPT_RETENTION_MS', DEFAULT_TRANSCRIPT_RETENTION_MS),
    runStreamReadersPerCaller: positiveIntFrom(env, 'RUN_STREAM_READERS_PER_CALLER', 16),
    eventsReplayRetentionMs: eventsReplayRetentionFrom(env),
    eventsReplayMaxBytes: positiveIntFrom(env, 'EVENTS_REPLAY_MAX_BYTES', 67108864),
    eventStreamsPerCaller: positiveIntFrom(env, 'EVENT_STREAMS_PER_CALLER', 8),
    chatTurnsPerMinute: positiveIntFrom(env, 'CHAT_TURNS_PER_MINUTE', 30),
    maxRunsPerIntern: positiveIntFrom(env, 'MAX_RUNS_PER_INTERN', 4),
    terminalsPerIntern: positiveIntFrom(env, 'TERMINALS_PER_INTERN', 4),
    terminalIdleMs: positiveIntFrom(env, 'TERMINAL_IDLE_MS', 900000),
    fileTransferPort: intFrom(env, 'FILE_TRANSFER_PORT', 0),
    fileTransferHost: stringFrom(env, 'FILE_TRANSFER_HOST', '127.0.0.1'),
    fileTransferAdvertisedHost: stringFrom(env, 'FILE_TRANSFER_ADVERTISED_HOST', stringFrom(env, 'FILE_TRANSFER_HOST', '127.0.0.1')),
    fileTransferStallMs: positiveIntFrom(env, 'FILE_TRANSFER_STALL_MS', 30000),
    fileTransfersPerReplica: positiveIntFrom(env, 'FILE_TRANSFERS_PER_REPLICA', 32),
    streamHeartbeatMs: positiveIntFrom(env, 'STREAM_HEARTBEAT_MS', 1000),
    streamClientBufferBytes: positiveIntFrom(env, 'STREAM_CLIENT_BUFFER_BYTES', 1048576),
    shellTimeoutMs: positiveIntFrom(env, 'SHELL_TIMEOUT_MS', 30000),
    shellOutputLimitBytes: positiveIntFrom(env, 'SHELL_OUTPUT_LIMIT_BYTES', 65536),
    runtimeSandbox,
    runtimeNetwork: oneOf(env, 'RUNTIME_NETWORK', RUNTIME_NETWORK_NAMES, 'egress'),
    shellMaxProcesses: positiveIntFrom(env, 'SHELL_MAX_PROCESSES', 64),
    shellMemoryBytes: positiveIntFrom(env, 'SHELL_MEMORY_BYTES', 536870912),
    internMemoryBytes: positiveIntFrom(env, 'INTERN_MEMORY_BYTES', 1073741824),
    internCpuMillicores: positiveIntFrom(env, 'INTERN_CPU_MILLICORES', 1000),
    shellTmpBytes: positiveIntFrom(env, 'SHELL_TMP_BYTES', 67108864),
    workspaceQuotaBytes: positiveIntFrom(env, 'WORKSPACE_QUOTA_BYTES', 1073741824),
    workspaceQuotaInodes: positiveIntFrom(env, 'WORKSPACE_QUOTA_INODES', 100000),
    fileUploadMaxBytes: positiveIntFrom(env, 'FILE_UPLOAD_MAX_BYTES', 104857600),
    workspaceDisk: oneOf(env, 'WORKSPACE_DISK', WORKSPACE_DISK_NAMES, runtimeSandbox === 'off' ? 'directory' : 'image'),
    sandboxUidBase: positiveIntFrom(env, 'SANDBOX_UID_BASE', 200000),
    maxToolCallsPerRun: positiveIntFrom(env, 'MAX_TOOL_CALLS_PER_RUN', 50),
    maxEventBytes: positiveIntFrom(env, 'MAX_EVENT_BYTES', DEFAULT_MAX_EVENT_BYTES),
    jetstreamMaxAgeMs: positiveIntFrom(env, 'JETSTREAM_MAX_AGE_MS', DEFAULT_JETSTREAM_MAX_AGE_MS),
    jetstreamMaxBytes: positiveIntFrom(env, 'JETSTREAM_MAX_BYTES', 1073741824),
    jetstreamReplicas: positiveIntFrom(env, 'JETSTREAM_REPLICAS', 1),
    nodeEnv: stringFrom(env, 'NODE_ENV', 'development'),
    adminReset: oneOf(env, 'ADMIN_RESET', ADMIN_RESET_NAMES, 'on'),
    modelRequestTimeoutMs: positiveIntFrom(env, 'MODEL_REQUEST_TIMEOUT_MS', 120000),
    daemonTokenTtlMs: positiveIntFrom(env, 'DAEMON_TOKEN_TTL_MS', 3600000),
    daemonSigningKey: optionalFrom(env, 'DAEMON_SIGNING_KEY'),
    daemonSigningKeyPrevious: optionalFrom(env, 'DAEMON_SIGNING_KEY_PREVIOUS'),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVEL_NAMES, 'info', LOG_LEVEL_ALIASES),
    tracesExporter: oneOf(env, 'OTEL_TRACES_EXPORTER', TRACES_EXPORTER_NAMES, 'none'),
    otelServiceName: optionalFrom(env, 'OTEL_SERVICE_NAME'),
    otelBatchDelayMs: positiveIntFrom(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000),
    webhookTimeoutMs: positiveIntFrom(env, 'WEBHOOK_TIMEOUT_MS', 10000),
    webhookRetryScheduleMs: retryScheduleFrom(env, 'WEBHOOK_RETRY_SCHEDULE_MS', DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS),
    webhookAllowInsecure: stringFrom(env, 'WEBHOOK_ALLOW_INSECURE', 'false') === 'true',
    webhookSecretsKey: optionalFrom(env, 'WEBHOOK_SECRETS_KEY'),
    webhookSecretsKeyPrevious: optionalFrom(env, 'WEBHOOK_SECRETS_KEY_PREVIOUS'),
    webhookEndpointsPerWorkspace: positiveIntFrom(env, 'WEBHOOK_ENDPOINTS_PER_WORKSPACE', 20),
    vaultMasterKey: optionalFrom(env, 'VAULT_MASTER_KEY'),
    vaultPublicKey: optionalFrom(env, 'VAULT_PUBLIC_KEY'),
    webhookDeliveryConcurrency: positiveIntFrom(env, 'WEBHOOK_DELIVERY_CONCURRENCY', 8),
    egressSocketDir: stringFrom(env, 'EGRESS_SOCKET_DIR', `${dataDir.replace(/\/+$/, '')}/egress`),
    egressPorts: optionalFrom(env, 'EGRESS_PORTS'),
    egressResolve: optionalFrom(env, 'EGRESS_RESOLVE'),
    egressAllowPrivate: optionalFrom(env, 'EGRESS_ALLOW_PRIVATE'),
    egressBytesPerRun: positiveIntFrom(env, 'EGRESS_BYTES_PER_RUN', 1073741824),
    egressConnectionsPerIntern: positiveIntFrom(env, 'EGRESS_CONNECTIONS_PER_INTERN', 64),
    egressLogRetentionMs: positiveIntFrom(env, 'EGRESS_LOG_RETENTION_MS', 2592000000),
    consoleDir: optionalFrom(env, 'CONSOLE_DIR'),
  };
}

/** JETSTREAM_MAX_AGE_MS's default: 7 days. */
const DEFAULT_JETSTREAM_MAX_AGE_MS = 604800000;

/** The event stream resumes from what the integration event streams still hold: never longer than they keep it. */
function eventsReplayRetentionFrom(env: Env): number {
  const retentionMs = positiveIntFrom(env, 'EVENTS_REPLAY_RETENTION_MS', 3600000);
  const streamMaxAgeMs = positiveIntFrom(env, 'JETSTREAM_MAX_AGE_MS', DEFAULT_JETSTREAM_MAX_AGE_MS);
  if (retentionMs > streamMaxAgeMs) {
    throw new Error(`EVENTS_REPLAY_RETENTION_MS (${retentionMs}) must not exceed JETSTREAM_MAX_AGE_MS (${streamMaxAgeMs}): the events would be gone`);
  }
  return retentionMs;
}

/** What INTERN_ORIGIN's `{hostname}` stands for. */
export const INTERN_ORIGIN_HOSTNAME = '{hostname}';
export const DEFAULT_INTERN_ORIGIN = `https://${INTERN_ORIGIN_HOSTNAME}`;

/** An origin per intern needs the hostname in it, and an origin is an http(s) URL without a path. */
function internOriginFrom(env: Env): string {
  const origin = stringFrom(env, 'INTERN_ORIGIN', DEFAULT_INTERN_ORIGIN);
  const example = origin.split(INTERN_ORIGIN_HOSTNAME).join('intern-0123abcd.example');
  const parsed = URL.canParse(example) ? new URL(example) : null;
  if (
    !origin.includes(INTERN_ORIGIN_HOSTNAME) ||
    parsed === null ||
    (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') ||
    parsed.origin !== example
  ) {
    throw new Error(`INTERN_ORIGIN must be an http(s) origin holding ${INTERN_ORIGIN_HOSTNAME}, like ${DEFAULT_INTERN_ORIGIN}; got "${origin}"`);
  }
  return origin;
}

/** An intern's origin: INTERN_ORIGIN with its hostname in place. */
export function internOriginOf(template: string, hostname: string): string {
  return template.split(INTERN_ORIGIN_HOSTNAME).join(hostname);
}

/** CONTRACT section 13: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h; seven attempts in all. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS: readonly number[] = [5000, 300000, 1800000, 7200000, 18000000, 36000000];

/** Comma-separated waits in ms; unset or empty: the default (so a schedule without retries cannot be set). */
function retryScheduleFrom(env: Env, name: string, fallback: readonly number[]): number[] {
  const items = listFrom(env, name, fallback.map(String));
  for (const item of items) {
    if (!/^\d+$/.test(item)) throw new Error(`${name} must be comma-separated non-negative integers (ms), got "${env[name]}"`);
  }
  return items.map(Number);
}

/** Asymmetric algorithms only: an HS* token would need a shared secret the platform never holds. */
export const DEFAULT_OIDC_ALGORITHMS: readonly string[] = ['RS256', 'ES256', 'EdDSA'];
export const DEFAULT_OIDC_MAX_TOKEN_AGE_S = 3600;

/** The local development OIDC issuer (admin `oauth-token`), trusted only with OIDC_LOCAL_DEV=true and never in production. */
export const LOCAL_OIDC_ISSUER = 'interns-local-dev';
export const OAUTH_AUDIENCE = 'interns-api';
/** Relative to KEYS_DIR. */
export const LOCAL_OIDC_DIR = 'dev-oidc';
