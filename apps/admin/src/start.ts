/**
 * `npm start`: runs gateway, lifecycle, runs and analytics as separate processes in the foreground.
 * Each service creates the database if missing and applies its own schema's migrations before it serves
 * (RUN_MIGRATIONS, default true). Ctrl-C or SIGTERM stops all of them; if one dies, the others are
 * stopped too and the exit code says so.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const SERVICES = ['lifecycle', 'runs', 'analytics', 'gateway'] as const;
const appsDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const STOP_GRACE_MS = 10000;

const children = new Map<string, ChildProcess>();
let stopping = false;
let exitCode = 0;

for (const service of SERVICES) {
  const child = spawn(process.execPath, [join(appsDir, service, 'src', 'main.js')], {
    stdio: 'inherit',
    env: process.env,
  });
  children.set(service, child);
  child.on('exit', (code, signal) => {
    children.delete(service);
    if (!stopping) {
      process.stderr.write(`${service} exited (${signal ?? code}); stopping the others\n`);
      exitCode = 1;
      stopAll('SIGTERM');
    }
    if (children.size === 0) process.exit(exitCode);
  });
}

function stopAll(signal: NodeJS.Signals): void {
  stopping = true;
  for (const child of children.values()) child.kill(signal);
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, STOP_GRACE_MS).unref();
}

process.on('SIGINT', () => stopAll('SIGTERM'));
process.on('SIGTERM', () => stopAll('SIGTERM'));
