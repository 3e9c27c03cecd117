import { spawn } from 'node:child_process';

export interface ShellOptions {
  command: string;
  /** The intern's workspace: the command's working directory and HOME. */
  cwd: string;
  timeoutMs: number;
  outputLimitBytes: number;
  /** Aborted when the run is cancelled. */
  signal: AbortSignal;
}

export interface ShellResult {
  /** stdout and stderr merged in arrival order, at most `outputLimitBytes` bytes of it. */
  output: string;
  /** null when the process ended by a signal (ours on timeout, truncation or cancellation). */
  exitCode: number | null;
  timedOut: boolean;
  truncated: boolean;
  cancelled: boolean;
}

/**
 * How long the pipes may stay open after the shell exited or was killed. A process that left the group
 * (setsid) could otherwise hold them, and the run, forever.
 */
const PIPE_GRACE_MS = 500;

/** Used when the service itself runs without PATH. */
const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Runs `command` with `/bin/sh -c` in its own process group, so that everything it starts can be killed at
 * once: on timeout, on cancellation, when its output exceeds the limit, and when the shell exits (background
 * jobs do not outlive the command). Resolves once the process closed and its pipes did (or PIPE_GRACE_MS after
 * the group ended, whichever is first); rejects only when the shell cannot start.
 */
export function runShell(options: ShellOptions): Promise<ShellResult> {
  const { command, cwd, timeoutMs, outputLimitBytes, signal } = options;
  if (signal.aborted) {
    return Promise.resolve({ output: '', exitCode: null, timedOut: false, truncated: false, cancelled: true });
  }
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], {
      cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Never the service's own environment: it holds DATABASE_URL and MODEL_API_KEY.
      env: { PATH: process.env.PATH ?? FALLBACK_PATH, LANG: 'C.UTF-8', HOME: cwd },
    });
    const output = new CappedOutput(outputLimitBytes);
    let stopped: 'timedOut' | 'truncated' | 'cancelled' | null = null;

    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // ESRCH: the whole group is gone already.
      }
    };
    let graceTimer: NodeJS.Timeout | undefined;
    const endGroup = () => {
      killGroup();
      graceTimer ??= setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_GRACE_MS);
    };
    const stop = (why: NonNullable<typeof stopped>) => {
      stopped ??= why;
      endGroup();
    };
    const onAbort = () => stop('cancelled');
    const timer = setTimeout(() => stop('timedOut'), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    // Once the shell exited, its result is decided: a later timeout or abort must not mark it.
    const settle = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    const cleanUp = () => {
      settle();
      clearTimeout(graceTimer);
    };

    const onData = (chunk: Buffer) => {
      if (!output.append(chunk)) stop('truncated');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    // Background jobs would keep the pipes open (and the run waiting) after the shell itself is done.
    child.on('exit', () => {
      settle();
      endGroup();
    });
    child.on('error', (error) => {
      cleanUp();
      reject(new Error(`the shell could not start in ${cwd}: ${error.message}`));
    });
    child.on('close', (code) => {
      cleanUp();
      resolve({
        output: output.text(),
        exitCode: code,
        timedOut: stopped === 'timedOut',
        truncated: output.truncated,
        cancelled: stopped === 'cancelled',
      });
    });
  });
}

/** Bytes up to a limit; the first byte beyond it marks the output truncated. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  /** Returns false once the limit is exceeded; later chunks are dropped. */
  append(chunk: Buffer): boolean {
    if (this.truncated) return false;
    const room = this.limit - this.size;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.size += chunk.length;
      return true;
    }
    this.chunks.push(chunk.subarray(0, room));
    this.size += room;
    this.truncated = true;
    return false;
  }

  text(): string {
    const bytes = Buffer.concat(this.chunks, this.size);
    return bytes.subarray(0, this.truncated ? utf8Boundary(bytes) : bytes.length).toString('utf8');
  }
}

/** The largest length <= bytes.length that does not split a UTF-8 sequence at the end. */
function utf8Boundary(bytes: Uint8Array): number {
  const end = bytes.length;
  for (let start = end - 1; start >= Math.max(0, end - 4); start--) {
    const byte = bytes[start];
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: look further back for the lead byte
    const length = byte < 0x80 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return start + length <= end ? end : start;
  }
  return end;
}

/**
 * What the model sees of a shell run (and what `local/scripted` streams): the output, then one line per
 * notable ending.
 */
export function formatShellResult(
  result: ShellResult,
  limits: { timeoutMs: number; outputLimitBytes: number },
): string {
  const notes: string[] = [];
  if (result.truncated) notes.push(`[output truncated at ${limits.outputLimitBytes} bytes]`);
  if (result.timedOut) notes.push(`[timed out after ${limits.timeoutMs} ms]`);
  if (result.cancelled) notes.push('[cancelled]');
  if (result.exitCode !== null && result.exitCode !== 0) notes.push(`[exit code ${result.exitCode}]`);
  if (result.exitCode === null && notes.length === 0) notes.push('[terminated by a signal]');
  if (notes.length === 0) return result.output;
  const separator = result.output === '' || result.output.endsWith('\n') ? '' : '\n';
  return `${result.output}${separator}${notes.join('\n')}`;
}
