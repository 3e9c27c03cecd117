import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { killProcess } from '@interns/testing';

/** The built entry point of an app, as the container image runs it. */
export function appEntry(app: string): string {
  return resolve('dist/apps', app, 'src/main.js');
}

export interface NodeRun {
  readonly pid: number;
  /** The exit code (null when ended by a signal). */
  readonly exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  /** Settles once stdout or stderr contains `text`; fails when the process exits first or `timeoutMs` passes. */
  waitForOutput(text: string, timeoutMs: number): Promise<void>;
  /** Signals this process (by its PID) unless it has already exited, and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const POLL_MS = 100;

/**
 * `<command> [...args]` with `env` over this process' environment. NODE_OPTIONS is dropped: jest's
 * flags (`--experimental-vm-modules`) are not the app's.
 */
export function startProcess(command: string, args: string[], env: Record<string, string>, cwd?: string): NodeRun {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.NODE_OPTIONS;
  const child = spawn(command, args, { env: childEnv, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  const commandLine = [command, ...args].join(' ');
  const pid = child.pid;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let running = true;
  const exited = new Promise<number | null>((done) => {
    // 'close', not 'exit': the output is complete only once the pipes have closed.
    child.once('close', (code) => {
      running = false;
      done(code);
    });
  });
  const describe = () => `stdout:\n${stdout}\nstderr:\n${stderr}`;
  return {
    pid,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    async waitForOutput(text, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!(stdout + stderr).includes(text)) {
        if (!running) throw new Error(`${commandLine} exited before writing "${text}"\n${describe()}`);
        if (Date.now() > deadline) throw new Error(`${commandLine} did not write "${text}" within ${timeoutMs} ms\n${describe()}`);
        await new Promise((done) => setTimeout(done, POLL_MS));
      }
    },
    async stop(signal = 'SIGTERM') {
      if (running) killProcess(pid, signal);
      return exited;
    },
  };
}

/** `node <entry> [...args]`, as the image runs an app. */
export function startNode(entry: string, args: string[], env: Record<string, string>): NodeRun {
  return startProcess(process.execPath, [entry, ...args], env);
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `<command> [...args]` in `cwd` to its end. */
export async function runProcess(command: string, args: string[], env: Record<string, string>, cwd?: string): Promise<Finished> {
  const run = startProcess(command, args, env, cwd);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/** Runs `node <entry> [...args]` to its end. */
export function runNode(entry: string, args: string[], env: Record<string, string>): Promise<Finished> {
  return runProcess(process.execPath, [entry, ...args], env);
}
