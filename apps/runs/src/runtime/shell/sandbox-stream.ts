import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { markDescriptorsCloseOnExec } from './descriptor-hygiene';
import { type ProcessPlan, wireExtraFds } from './process-runner';

/** How the streamed process ended. */
export interface StreamedExit {
  /** The launched process's own exit code; null when a signal (our kill) ended it. */
  exitCode: number | null;
  /** What it wrote to stderr, at most the limit (the rest dropped). */
  stderr: string;
  /** What it wrote to each `output` extra fd, by its index in `extraFds` (bwrap's status). */
  fdOutputs: Map<number, string>;
  /** `kill()` was called before it ended. */
  killed: boolean;
}

/** A running process whose stdin and stdout the caller drives (a file's bytes; a terminal next). */
export interface StreamedProcess {
  stdin: Writable;
  stdout: Readable;
  /** Settles once the process exited and its pipes closed; rejects only when it could not start. */
  finished: Promise<StreamedExit>;
  /** Kills the whole process group and closes the pipes (abort, stall, a client gone); safe to repeat. */
  kill(): void;
}

export interface StreamLimits {
  stderrLimitBytes: number;
  /** A ceiling on the whole process: past it, `kill()`. */
  timeoutMs: number;
}

/**
 * Starts the plan in its own process group (and session) with stdin and stdout as pipes the caller reads and writes
 * with backpressure, stderr captured. When the process exits its group is killed at once, so nothing it started
 * outlives it (in a sandbox its PID namespace already ensures that); stdout stays readable for what is buffered.
 */
export function streamProcess(plan: ProcessPlan, limits: StreamLimits): StreamedProcess {
  const extraFds = plan.extraFds ?? [];
  markDescriptorsCloseOnExec();
  const child = spawn(plan.file, plan.args, {
    cwd: plan.cwd,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', ...extraFds.map(() => 'pipe' as const)],
    env: plan.env,
    uid: plan.uid,
    gid: plan.gid,
  });
  const [stdin, stdout, stderr] = child.stdio as [Writable, Readable, Readable, ...(Readable | Writable)[]];
  // EPIPE when the process ended before reading all: its exit status tells the caller what happened.
  stdin.on('error', () => undefined);
  stdout.on('error', () => undefined);
  const fdOutputs = new Map<number, string>();
  wireExtraFds(child, extraFds, fdOutputs);
  let errorText = '';
  stderr.setEncoding('utf8');
  stderr.on('data', (chunk: string) => {
    if (errorText.length < limits.stderrLimitBytes) errorText = (errorText + chunk).slice(0, limits.stderrLimitBytes);
  });
  stderr.on('error', () => undefined);

  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // ESRCH: the whole group is gone already.
    }
  };
  let killed = false;
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) killed = true;
    killGroup();
    for (const stream of child.stdio) stream?.destroy();
  };
  const timer = setTimeout(kill, limits.timeoutMs);
  const finished = new Promise<StreamedExit>((resolve, reject) => {
    child.on('exit', () => {
      clearTimeout(timer);
      killGroup();
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ exitCode: code, stderr: errorText, fdOutputs, killed });
    });
  });
  return { stdin, stdout, finished, kill };
}
