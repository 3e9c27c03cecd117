import { ChildProcess, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { TEST_JETSTREAM_MAX_BYTES } from './test-streams';

/**
 * Ports handed out for services to listen on, seconds later. Taken below the kernel's ephemeral range (Linux:
 * 32768-60999), where no outgoing connection can take one meanwhile: a port the kernel chose for `listen(0)` and
 * freed again is the next one an outgoing connection (to PostgreSQL, NATS, ...) may be given, and a runs process
 * then failed to start with EADDRINUSE. Each jest worker draws from a band of its own (JEST_WORKER_ID; band 0 for
 * anything else), in turn from a random start, and a port that does not listen now is skipped.
 */
const FIRST_BAND_PORT = 20_000;
const BAND_PORTS = 1_000;
const BANDS = 12;
let nextBandPort: number | null = null;

/** A TCP port that is free now and that nothing but a listener of ours should take before it is used. */
export async function freePort(): Promise<number> {
  if (ephemeralRangeStart() <= FIRST_BAND_PORT + BANDS * BAND_PORTS) return anyFreePort();
  const band = FIRST_BAND_PORT + (Number(process.env.JEST_WORKER_ID ?? 0) % BANDS) * BAND_PORTS;
  nextBandPort ??= band + randomInt(BAND_PORTS);
  for (let tried = 0; tried < BAND_PORTS; tried += 1) {
    const port: number = nextBandPort;
    nextBandPort = band + ((port - band + 1) % BAND_PORTS);
    if (await listens(port)) return port;
  }
  return anyFreePort();
}

/** The first port of the kernel's range for outgoing connections (Linux), or 0 when it cannot be read. */
function ephemeralRangeStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 0;
  } catch {
    return 0;
  }
}

function listens(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

/** A TCP port that was free a moment ago: listen on 0, read the port, close. */
function anyFreePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

export interface ExitResult {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process a test started; only ever signalled by its own PID. */
export interface ChildHandle {
  readonly pid: number;
  /** Settles when the process has exited. */
  readonly exited: Promise<ExitResult>;
  /** stdout and stderr so far, for assertion messages. */
  output(): string;
  /** Every complete line written to stdout so far (the last 20,000), e.g. to read JSON log lines. */
  stdoutLines(): string[];
  /** Sends `signal` (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<ExitResult>;
  /** Teardown: SIGKILL if it still runs. */
  kill(): void;
}

const MAX_STDOUT_LINES = 20_000;

function startChild(command: string, args: string[], env: NodeJS.ProcessEnv): ChildHandle {
  const child: ChildProcess = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  const pid = child.pid;
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-64_000);
  };
  const stdoutLines: string[] = [];
  let partialLine = '';
  const decoder = new StringDecoder('utf8'); // a character split across chunks stays whole
  child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (partialLine + decoder.write(chunk)).split('\n');
    partialLine = lines.pop() ?? '';
    stdoutLines.push(...lines);
    if (stdoutLines.length > MAX_STDOUT_LINES) stdoutLines.splice(0, stdoutLines.length - MAX_STDOUT_LINES);
  });
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<ExitResult>((done) => {
    child.once('exit', (code, signal) => done({ code, signal }));
  });
  let running = true;
  void exited.then(() => {
    running = false;
  });
  return {
    pid,
    exited,
    output: () => output,
    stdoutLines: () => [...stdoutLines],
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (running) killProcess(pid, signal);
      return exited;
    },
    kill() {
      if (running) killProcess(pid, 'SIGKILL');
    },
  };
}

/** Signals one process by PID, ignoring one that has already gone. */
export function killProcess(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Polls `url` until it answers `status`; fails early when `exited` settles first. */
export async function waitForHttp(
  url: string,
  options: { status?: number; timeoutMs?: number; exited?: Promise<ExitResult>; describe?: () => string } = {},
): Promise<void> {
  const wanted = options.status ?? 200;
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let gone: ExitResult | null = null;
  void options.exited?.then((result) => {
    gone = result;
  });
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (gone !== null) break;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      last = `HTTP ${response.status}`;
      await response.body?.cancel();
      if (response.status === wanted) return;
    } catch (error) {
      // fetch's own message ("fetch failed") hides why: the cause (ECONNREFUSED, ...) says it.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      last = cause === undefined ? (error as Error).message : `${(error as Error).message} (${cause.code ?? cause.message})`;
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  const why = gone !== null ? `process exited ${JSON.stringify(gone)}` : `timed out, last: ${last}`;
  throw new Error(`${url} never answered ${wanted}: ${why}\n${options.describe?.() ?? ''}`);
}

export interface ServiceProcess extends ChildHandle {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
}

/**
 * Runs a built service (`node <entry>`) with `env` on top of this process' environment and waits
 * until `GET /health/ready` answers 200. NODE_OPTIONS is dropped: jest's flags are not the service's.
 */
export async function startServiceProcess(options: {
  entry: string;
  port: number;
  env: Record<string, string>;
  /** Default 60 s: a start takes 2-3 s, but several platforms starting at once on a shared 2-core machine take far longer. */
  readyTimeoutMs?: number;
}): Promise<ServiceProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, JETSTREAM_MAX_BYTES: String(TEST_JETSTREAM_MAX_BYTES), ...options.env };
  delete env.NODE_OPTIONS;
  // Profiling a benchmark's services (`SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=..."`): node flags for them.
  const nodeArgs = (process.env.SERVICE_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const child = startChild(process.execPath, [...nodeArgs, resolve(options.entry)], env);
  const url = `http://127.0.0.1:${options.port}`;
  try {
    await waitForHttp(`${url}/health/ready`, {
      timeoutMs: options.readyTimeoutMs ?? 60_000,
      exited: child.exited,
      describe: child.output,
    });
  } catch (error) {
    child.kill();
    (error as Error).message = `${options.entry}: ${(error as Error).message}`;
    throw error;
  }
  return { ...child, url };
}

export interface NatsServerProcess extends ChildHandle {
  readonly port: number;
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops the server and removes its JetStream directory. */
  remove(): Promise<void>;
}

/**
 * A private nats-server for tests that need a broker outage (never stop the shared one). Restart
 * it on the same port by calling this again with `port`. `config`: a configuration file (e.g. `admin nats-setup`'s);
 * address and port still come from here.
 */
export async function startNatsServer(
  options: { port?: number; jetstream?: boolean; config?: string; /** bytes; the server's default is 1 MiB */ maxPayload?: number } = {},
): Promise<NatsServerProcess> {
  const port = options.port ?? (await freePort());
  const storeDir = await mkdtemp(join(tmpdir(), 'nats-test-'));
  let config = options.config;
  // No command-line flag sets it: a configuration file does (the flags below still apply).
  if (options.maxPayload !== undefined) {
    if (config !== undefined) throw new Error('startNatsServer: give either config or maxPayload');
    config = join(storeDir, 'nats-server.conf');
    await writeFile(config, `max_payload: ${options.maxPayload}\n`);
  }
  const args = [...(config ? ['-c', config] : []), '-a', '127.0.0.1', '-p', String(port)];
  if (options.jetstream) args.push('-js', '-sd', storeDir);
  const child = startChild(process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server', args, process.env);
  const url = `nats://127.0.0.1:${port}`;
  const remove = async () => {
    await child.stop('SIGTERM');
    await rm(storeDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await portOpen(port))) {
    if (Date.now() > deadline) {
      await remove();
      throw new Error(`nats-server on ${port} did not start\n${child.output()}`);
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  return { ...child, port, url, remove };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}
