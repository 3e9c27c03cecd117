import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pty, { type IPty } from '@lydell/node-pty';
import { markDescriptorsCloseOnExec } from './descriptor-hygiene';
import type { ProcessPlan } from './process-runner';

/** How a terminal's process ended. */
export interface PtyExit {
  /** bwrap's status output (`--json-status-fd`): read the command's own exit code with `parseStatus`. */
  status: string;
  /** `kill()` ended it. */
  killed: boolean;
}

/** A process under a pseudo-terminal whose bytes the caller moves (a terminal attached to an intern). */
export interface PtyProcess {
  /** Output of the terminal, as it comes. `pause()`/`resume()` hold it back while the reader is behind. */
  onData(listener: (data: Buffer) => void): void;
  write(data: Buffer | string): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  /** Settles once the process ended (never rejects). */
  finished: Promise<PtyExit>;
  /** Ends the process and everything it started; safe to repeat. */
  kill(): void;
}

export interface PtySize {
  cols: number;
  rows: number;
}

/**
 * Wires the plan's extra descriptors (fd 3 on) from files before exec'ing the rest: a pseudo-terminal's process gets
 * stdio only, so the generated `/etc` files, bwrap's status and the syscall filter travel through a private directory.
 * `$1` is how many descriptors follow as paths, in order; `$2..` the paths; then the command.
 */
const FDS_FROM_FILES_SHELL = [
  'count="$1"; shift; fd=3',
  'while [ "$count" -gt 0 ]; do',
  '  case "$1" in',
  '    "<"*) eval "exec $fd<\\"\\${1#<}\\"" ;;',
  '    *) eval "exec $fd>\\"\\${1#>}\\"" ;;',
  '  esac',
  '  fd=$((fd + 1)); count=$((count - 1)); shift',
  'done',
  'exec "$@"',
].join('\n');

/**
 * Starts the plan under a pseudo-terminal (node-pty: the kept library for it). Its `input` descriptors are written
 * to files in a directory only root reads, reopened as fd 3.. by a short shell before the launch execs; its `output`
 * descriptors likewise, read back when it ends. The process is a session leader with the terminal as its
 * controlling terminal; killing it kills the launch, and bwrap's `--die-with-parent` takes the whole sandbox (its
 * PID namespace) with it.
 */
export async function spawnPty(plan: ProcessPlan, size: PtySize): Promise<PtyProcess> {
  const extraFds = plan.extraFds ?? [];
  const dir = await mkdtemp(join(tmpdir(), 'interns-pty-'));
  const paths: string[] = [];
  let statusIndex = -1;
  for (const [index, fd] of extraFds.entries()) {
    const path = join(dir, String(index));
    if (fd.kind === 'input') {
      await writeFile(path, fd.data, { mode: 0o600 });
      paths.push(`<${path}`);
    } else {
      await (await open(path, 'w', 0o600)).close();
      paths.push(`>${path}`);
      statusIndex = index;
    }
  }
  markDescriptorsCloseOnExec();
  let child: IPty;
  try {
    child = pty.spawn('/bin/sh', ['-c', FDS_FROM_FILES_SHELL, 'pty-launch', String(paths.length), ...paths, plan.file, ...plan.args], {
      name: 'xterm-256color',
      cols: size.cols,
      rows: size.rows,
      // The service's own working directory, as the shell tool's launch has it: DATA_DIR may be relative (npm start).
      cwd: process.cwd(),
      env: plan.env,
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  let killed = false;
  const finished = new Promise<PtyExit>((resolve) => {
    child.onExit(() => {
      void (async () => {
        const status = statusIndex < 0 ? '' : await readFile(join(dir, String(statusIndex)), 'utf8').catch(() => '');
        await rm(dir, { recursive: true, force: true });
        resolve({ status, killed });
      })();
    });
  });
  return {
    // UTF-8 both ways (node-pty decodes with a stream decoder, so a character split across reads stays whole).
    onData: (listener) => void child.onData((data) => listener(Buffer.from(data, 'utf8'))),
    write: (data) => child.write(typeof data === 'string' ? data : data.toString('utf8')),
    resize: (cols, rows) => child.resize(cols, rows),
    pause: () => child.pause(),
    resume: () => child.resume(),
    finished,
    kill: () => {
      if (killed) return;
      killed = true;
      try {
        // The launch's whole process group; the sandbox inside dies with it (--die-with-parent).
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // ESRCH: gone already.
      }
    },
  };
}
