import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/** How to start the process: what `spawn` gets. */
export interface ProcessPlan {
  file: string;
  args: string[];
  /** The whole environment of the process (never the service's own: it holds DATABASE_URL and MODEL_API_KEY). */
  env: Record<string, string>;
  cwd?: string;
  /** Host credentials the process runs with (the service must be allowed to switch to them). */
  uid?: number;
  gid?: number;
  /** File descriptors from 3 on: `input` data is written and closed at once; `output` is read whole. */
  extraFds?: ({ kind: 'input'; data: string | Buffer } | { kind: 'output' })[];
}

export interface ProcessLimits {
  timeoutMs: number;
  outputLimitBytes: number;
  /** Aborted when the run is cancelled. */
  signal: AbortSignal;
}

export interface ProcessResult {
  /** stdout and stderr merged in arrival order, at most `outputLimitBytes` bytes of it. */
  output: string;
  /** null when the process ended by a signal (ours on timeout, truncation or cancellation). */
  exitCode: number | null;
  timedOut: boolean;
  truncated: boolean;
  cancelled: boolean;
  /** What the process wrote to each `output` extra fd, by its index in `extraFds`. */
  fdOutputs: Map<number, string>;
}

/**
 * How long the pipes may stay open after the process exited or was killed. A process that left the group
 * (setsid, without a PID namespace around it) could otherwise hold them, and the run, forever.
 */
const PIPE_GRACE_MS = 500;

/**
 * Runs the plan in its own process group (and session), so that everything it starts can be killed at once:
 * on timeout, on cancellation, when its output exceeds the limit, and when it exits (background jobs do not
 * outlive it). Resolves once the process closed and its pipes did (or PIPE_GRACE_MS after the group ended,
 * whichever is first); rejects only when the process cannot start.
 */
export function runProcess(plan: ProcessPlan, limits: ProcessLimits): Promise<ProcessResult> {
  const { timeoutMs, outputLimitBytes, signal } = limits;
  const extraFds = plan.extraFds ?? [];
  if (signal.aborted) {
    return Promise.resolve({ output: '', exitCode: null, timedOut: false, truncated: false, cancelled: true, fdOutputs: new Map() });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(plan.file, plan.args, {
      cwd: plan.cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...extraFds.map(() => 'pipe' as const)],
      env: plan.env,
      uid: plan.uid,
      gid: plan.gid,
    });
    const [, stdout, stderr] = child.stdio as [null, Readable, Readable, ...(Readable | Writable)[]];
    const output = new CappedOutput(outputLimitBytes);
    const fdOutputs = new Map<number, string>();
    let stopped: 'timedOut' | 'truncated' | 'cancelled' | null = null;

    wireExtraFds(child, extraFds, fdOutputs);

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
        for (const stream of child.stdio) stream?.destroy();
      }, PIPE_GRACE_MS);
    };
    const stop = (why: NonNullable<typeof stopped>) => {
      stopped ??= why;
      endGroup();
    };
    const onAbort = () => stop('cancelled');
    const timer = setTimeout(() => stop('timedOut'), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    // Once the process exited, its result is decided: a later timeout or abort must not mark it.
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
    stdout.on('data', onData);
    stderr.on('data', onData);
    // Background jobs would keep the pipes open (and the run waiting) after the process itself is done.
    child.on('exit', () => {
      settle();
      endGroup();
    });
    child.on('error', (error) => {
      cleanUp();
      reject(error);
    });
    child.on('close', (code) => {
      cleanUp();
      resolve({
        output: output.text(),
        exitCode: code,
        timedOut: stopped === 'timedOut',
        truncated: output.truncated,
        cancelled: stopped === 'cancelled',
        fdOutputs,
      });
    });
  });
}

/**
 * Feeds the plan's `input` descriptors (written and closed at once) and collects what its `output` descriptors get,
 * by index in `extraFds`, into `fdOutputs`.
 */
export function wireExtraFds(child: ChildProcess, extraFds: NonNullable<ProcessPlan['extraFds']>, fdOutputs: Map<number, string>): void {
  extraFds.forEach((fd, index) => {
    const stream = child.stdio[3 + index];
    if (stream === null || stream === undefined) return;
    if (fd.kind === 'input') {
      (stream as Writable).on('error', () => undefined); // EPIPE when the process died before reading
      (stream as Writable).end(fd.data);
    } else {
      let text = '';
      (stream as Readable).setEncoding('utf8');
      (stream as Readable).on('data', (chunk: string) => (text += chunk));
      (stream as Readable).on('error', () => undefined);
      // 'end' comes before the child's own 'close', which may be emitted before this stream's 'close' listeners run.
      (stream as Readable).on('end', () => fdOutputs.set(index, text));
      (stream as Readable).on('close', () => fdOutputs.set(index, text));
    }
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
 * notable ending, then the caller's own notes (e.g. the workspace quota).
 */
export function formatShellResult(
  result: Pick<ProcessResult, 'output' | 'exitCode' | 'timedOut' | 'truncated' | 'cancelled'>,
  limits: { timeoutMs: number; outputLimitBytes: number },
  extraNotes: string[] = [],
): string {
  const notes: string[] = [];
  if (result.truncated) notes.push(`[output truncated at ${limits.outputLimitBytes} bytes]`);
  if (result.timedOut) notes.push(`[timed out after ${limits.timeoutMs} ms]`);
  if (result.cancelled) notes.push('[cancelled]');
  if (result.exitCode !== null && result.exitCode !== 0) notes.push(`[exit code ${result.exitCode}]`);
  if (result.exitCode === null && notes.length === 0) notes.push('[terminated by a signal]');
  notes.push(...extraNotes);
  if (notes.length === 0) return result.output;
  const separator = result.output === '' || result.output.endsWith('\n') ? '' : '\n';
  return `${result.output}${separator}${notes.join('\n')}`;
}
