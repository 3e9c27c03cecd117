/**
 * `npm start`: runs gateway, lifecycle, runs, analytics and webhooks as separate processes in the foreground.
 * First it checks that PostgreSQL and NATS answer (one line naming what is missing, exit 1). Each service
 * creates the database if missing and applies its own schema's migrations before it serves (RUN_MIGRATIONS,
 * default true). Their JSON log lines are shown human-readable on a terminal (LOG_FORMAT overrides it).
 * Ctrl-C or SIGTERM stops all of them; if one dies, the others are stopped too and the exit code says so.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { infrastructurePreflight } from './launcher/infrastructure-preflight';
import { chooseLogFormat, colorsFor, type LogFormat, prettifyLines } from './launcher/log-format';

const SERVICES = ['lifecycle', 'runs', 'analytics', 'webhooks', 'gateway'] as const;
const appsDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const STOP_GRACE_MS = 10000;

const children = new Map<string, ChildProcess>();
let stopping = false;
let exitCode = 0;

/**
 * The launcher is for development: its gateway trusts the local issuer, so `admin oauth-token` tokens work.
 * An explicit OIDC_LOCAL_DEV wins, and production is left as configured (the gateway refuses the local issuer there).
 */
function launchEnv(): NodeJS.ProcessEnv {
  if (process.env.OIDC_LOCAL_DEV !== undefined || process.env.NODE_ENV === 'production') return process.env;
  return { ...process.env, OIDC_LOCAL_DEV: 'true' };
}

function startServices(format: LogFormat): void {
  const colorize = colorsFor(process.stdout.isTTY === true);
  for (const service of SERVICES) {
    const child = spawn(process.execPath, [join(appsDir, service, 'src', 'main.js')], {
      stdio: ['inherit', format === 'pretty' ? 'pipe' : 'inherit', 'inherit'],
      env: launchEnv(),
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

function stopAll(signal: NodeJS.Signals): void {
  stopping = true;
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
  const format = chooseLogFormat(process.env, process.stdout.isTTY === true);
  const missing = await infrastructurePreflight(process.env);
  if (missing.length > 0) {
    process.stderr.write(`${missing.join('\n')}\n`);
    process.exit(1);
  }
  startServices(format);
} catch (error) {
  // A bad LOG_FORMAT, DATABASE_URL or NATS_URL: one line, not a stack trace.
  process.stderr.write(`npm start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
