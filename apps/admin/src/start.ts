/**
 * `npm start`: runs gateway, lifecycle, runs, analytics, webhooks and egress as separate processes in the foreground.
 * First it checks that PostgreSQL and NATS answer (one line naming what is missing, exit 1), then, as the
 * database owner (MIGRATIONS_DATABASE_URL, else DATABASE_URL), creates the database if missing and each
 * service's role (`admin db-setup`). Each service applies its own schema's migrations as the owner
 * (RUN_MIGRATIONS, default true) and serves as its own role (its DATABASE_URL: the owner's with the role's
 * name). Their JSON log lines are shown human-readable on a terminal (LOG_FORMAT overrides it).
 * Settings: the environment, then `.env` in the working directory for what it leaves unset (as `npm run admin`).
 * Once each service's readiness answers 200 it prints one line, the gateway's last, then the API and console URLs.
 * Ctrl-C or SIGTERM stops all of them; if one dies, the others are stopped too and the exit code says so.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { databasePasswordVariable, INTERN_ORIGIN_HOSTNAME, loadConfig, SERVICE_NAMES, type ServiceName } from '@interns/contracts';
import { serviceDatabaseUrl } from '@interns/database';
import { runDbSetup } from './commands/db-setup.command';
import { environmentWithEnvFile } from './env-file';
import { infrastructurePreflight } from './launcher/infrastructure-preflight';
import { chooseLogFormat, colorsFor, type LogFormat, prettifyLines } from './launcher/log-format';
import { announceReadiness, type ReadinessTarget, summaryLine } from './launcher/readiness';

const SERVICES = ['lifecycle', 'egress', 'runs', 'analytics', 'webhooks', 'gateway'] as const;
const appsDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const STOP_GRACE_MS = 10000;

const children = new Map<string, ChildProcess>();
let stopping = false;
let exitCode = 0;
/** Ends the readiness probes when the launcher stops. */
const probing = new AbortController();

/** The launcher's own lines, on stderr: stdout carries the services' log lines (JSON lines when piped). */
function say(line: string): void {
  process.stderr.write(`npm start: ${line}\n`);
}

/** `.env` under the environment, for this process and every service it starts. */
function readEnvFile(): void {
  const { env, file } = environmentWithEnvFile(process.env);
  if (file === null) return;
  for (const [name, value] of Object.entries(env)) if (value !== undefined) process.env[name] = value;
  say(`settings from the environment and ${file} (the environment wins)`);
}

/**
 * The launcher is for development: its gateway trusts the local issuer, so `admin oauth-token` tokens work.
 * An explicit OIDC_LOCAL_DEV wins, and production is left as configured (the gateway refuses the local issuer there).
 * Interns' doors are reached at the gateway itself (`http://{hostname}:<GATEWAY_PORT>`, INTERN_ORIGIN unless set):
 * under the default INTERN_DOMAIN (`interns.localhost`) every hostname resolves to loopback in curl and browsers.
 */
function launchEnv(): NodeJS.ProcessEnv {
  if (process.env.NODE_ENV === 'production') return process.env;
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (env.INTERN_ORIGIN === undefined || env.INTERN_ORIGIN === '') env.INTERN_ORIGIN = localInternOrigin(env);
  if (env.OIDC_LOCAL_DEV === undefined) env.OIDC_LOCAL_DEV = 'true';
  // File bodies go straight from the gateway to runs (docs/architecture.md, Files) unless set otherwise.
  if (env.FILE_TRANSFER_PORT === undefined || env.FILE_TRANSFER_PORT === '') env.FILE_TRANSFER_PORT = String(LOCAL_FILE_TRANSFER_PORT);
  // Node's on-disk compile cache: the second and later starts skip compiling the services' modules.
  if (env.NODE_COMPILE_CACHE === undefined) env.NODE_COMPILE_CACHE = join(tmpdir(), 'interns-node-compile-cache');
  return env;
}

/** FILE_TRANSFER_PORT of `npm start`: beside the services' own ports (8080-8085). */
const LOCAL_FILE_TRANSFER_PORT = 8086;

/** INTERN_ORIGIN of `npm start`: the door is the gateway's own port. */
function localInternOrigin(env: NodeJS.ProcessEnv): string {
  return `http://${INTERN_ORIGIN_HOSTNAME}:${loadConfig({ GATEWAY_PORT: env.GATEWAY_PORT }).gatewayPort}`;
}

type DatabaseEnv = Record<'DATABASE_URL' | 'MIGRATIONS_DATABASE_URL', string>;

/**
 * `admin db-setup` as the owner, then each service's database settings: its own role's URL (with its password when
 * `<SERVICE>_DATABASE_PASSWORD` is set), and the owner's for its migrations. Only the database settings are read
 * here: any other bad setting is reported by the services themselves, as they start.
 */
async function serviceDatabaseEnvs(): Promise<Record<ServiceName, DatabaseEnv>> {
  const names = ['DATABASE_URL', 'MIGRATIONS_DATABASE_URL', ...SERVICE_NAMES.map(databasePasswordVariable)];
  const config = loadConfig(Object.fromEntries(names.map((name) => [name, process.env[name]])));
  const report = await runDbSetup(config).catch((error: unknown) => {
    throw new Error(`creating the services' database roles (admin db-setup) failed: ${error instanceof Error ? error.message : String(error)}`);
  });
  say(`database "${report.database}": services connect as ${report.roles.map(({ role }) => role).join(', ')}`);
  const owner = config.migrationsDatabaseUrl;
  return Object.fromEntries(
    SERVICE_NAMES.map((service) => [
      service,
      { DATABASE_URL: serviceDatabaseUrl(owner, service, config.databaseRolePasswords[service]), MIGRATIONS_DATABASE_URL: owner },
    ]),
  ) as Record<ServiceName, DatabaseEnv>;
}

function startServices(format: LogFormat, databaseEnvs: Record<ServiceName, DatabaseEnv>): void {
  const colorize = colorsFor(process.stdout.isTTY === true);
  for (const service of SERVICES) {
    const child = spawn(process.execPath, [join(appsDir, service, 'src', 'main.js')], {
      stdio: ['inherit', format === 'pretty' ? 'pipe' : 'inherit', 'inherit'],
      env: { ...launchEnv(), ...databaseEnvs[service] },
    });
    children.set(service, child);
    if (child.stdout) void prettifyLines(child.stdout, process.stdout, colorize);
    child.on('exit', (code, signal) => {
      if (!stopping) {
        process.stderr.write(`${service} exited (${signal ?? code}); stopping the others\n`);
        exitCode = 1;
        stopAll('SIGTERM');
      }
      // Something the child started may still hold its stdout; its own lines are in by now.
      setTimeout(() => child.stdout?.destroy(), 1000).unref();
    });
    // 'close', not 'exit': by then the child's last log lines have been written.
    child.on('close', () => {
      children.delete(service);
      if (children.size === 0) process.exit(exitCode);
    });
  }
}

/**
 * One line per service once it is ready, the gateway's last, then the URLs. Only the ports are read here: a bad
 * setting is reported by the services themselves as they start (and then there is nothing to announce).
 */
function announceWhenReady(): void {
  let config: ReturnType<typeof loadConfig>;
  try {
    const names = SERVICES.map((service) => `${service.toUpperCase()}_PORT`);
    config = loadConfig(Object.fromEntries(names.map((name) => [name, process.env[name]])));
  } catch {
    return;
  }
  const ports: Record<(typeof SERVICES)[number], number> = {
    lifecycle: config.lifecyclePort,
    egress: config.egressPort,
    runs: config.runsPort,
    analytics: config.analyticsPort,
    webhooks: config.webhooksPort,
    gateway: config.gatewayPort,
  };
  const target = (service: (typeof SERVICES)[number]): ReadinessTarget => ({ service, port: ports[service] });
  void announceReadiness({
    gateway: target('gateway'),
    services: SERVICES.filter((service) => service !== 'gateway').map(target),
    summary: summaryLine(config.gatewayPort, process.env.NODE_ENV !== 'production'),
    write: say,
    signal: probing.signal,
  });
}

function stopAll(signal: NodeJS.Signals): void {
  stopping = true;
  probing.abort();
  for (const child of children.values()) child.kill(signal);
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, STOP_GRACE_MS).unref();
}

function onSignal(): void {
  // Before the services started (during the preflight) there is nothing to wait for.
  if (children.size === 0) process.exit(exitCode);
  stopAll('SIGTERM');
}

process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

try {
  readEnvFile();
  const format = chooseLogFormat(process.env, process.stdout.isTTY === true);
  const missing = await infrastructurePreflight(process.env);
  if (missing.length > 0) {
    process.stderr.write(`${missing.join('\n')}\n`);
    process.exit(1);
  }
  startServices(format, await serviceDatabaseEnvs());
  announceWhenReady();
} catch (error) {
  // A bad LOG_FORMAT, DATABASE_URL or NATS_URL, an unreadable .env, or roles the owner may not create: one line, not a stack trace.
  say(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
