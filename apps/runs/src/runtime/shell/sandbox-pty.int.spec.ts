/**
 * A terminal's process in the intern's real sandbox (bubblewrap on this host) under a real pseudo-terminal: the shell
 * sees a terminal (TERM, window size, job control), runs as the intern's uid in its workspace, and nothing of it
 * outlives `kill()`.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryDisks } from '../directory-disks';
import { SandboxLauncher, type SandboxLaunch, SandboxRefusal } from './sandbox-launch';
import { spawnPty, type PtyProcess } from './sandbox-pty';

const UID = 240000 + Math.floor(Math.random() * 10000) * 10;
const LIMITS = {
  timeoutMs: 5000,
  outputLimitBytes: 64 * 1024,
  maxProcesses: 32,
  memoryBytes: 512 * 1024 * 1024,
  internMemoryBytes: 256 * 1024 * 1024,
  cpuMillicores: 1000,
  tmpBytes: 4 * 1024 * 1024,
};

let root: string;
let workspace: string;
let launcher: SandboxLauncher;
const internId = randomUUID();

/** Everything the terminal printed so far, and a way to wait for a text in it. */
function screen(terminal: PtyProcess): { text: () => string; until: (needle: string | RegExp, ms?: number) => Promise<string> } {
  let text = '';
  terminal.onData((data) => (text += data.toString('utf8')));
  return {
    text: () => text,
    until: async (needle, ms = 5000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        if (typeof needle === 'string' ? text.includes(needle) : needle.test(text)) return text;
        if (Date.now() > deadline) throw new Error(`not seen within ${ms} ms: ${String(needle)}\n--- screen ---\n${text}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

/** Processes of the intern's uid on this host (read from /proc: the sandbox's PID namespace is below ours). */
function processesOfUid(uid: number): string {
  try {
    return execFileSync('pgrep', ['-u', String(uid), '-l'], { encoding: 'utf8' });
  } catch {
    return '';
  }
}

async function terminalLaunch(): Promise<SandboxLaunch> {
  const host = await launcher.ready();
  if (host instanceof SandboxRefusal) throw new Error(host.message);
  await launcher.prepareWorkspace(workspace, UID);
  const launch = await launcher.launch(host, { cgroupName: internId, uid: UID, workspace, command: 'exec /bin/bash -l', terminal: { term: 'xterm-256color' } });
  if (launch instanceof SandboxRefusal) throw new Error(launch.message);
  return launch;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sandbox-pty-spec-'));
  await chmod(root, 0o711);
  const workspacesDir = join(root, 'workspaces');
  workspace = join(workspacesDir, internId);
  await mkdir(workspace, { recursive: true });
  launcher = new SandboxLauncher({ workspacesDir, limits: LIMITS, disks: new DirectoryDisks({ bytes: 1024 * 1024, inodes: 1000 }), egress: false });
});

afterAll(async () => {
  const host = await launcher?.ready();
  if (host !== undefined && !(host instanceof SandboxRefusal)) await host.cgroups.remove(internId);
  if (root) await rm(root, { recursive: true, force: true });
});

describe('a login shell under a pseudo-terminal in the sandbox', () => {
  it("is the intern's uid, at home in its workspace, with TERM, the window size and job control", async () => {
    const terminal = await spawnPty((await terminalLaunch()).plan, { cols: 100, rows: 30 });
    const seen = screen(terminal);
    try {
      terminal.write('echo "uid=$(id -u) home=$HOME pwd=$(pwd) term=$TERM size=$(stty size)"\r');
      await seen.until(`uid=${UID} home=/workspace pwd=/workspace term=xterm-256color size=30 100`);
      terminal.resize(132, 43);
      terminal.write('echo "resized=$(stty size)"\r');
      await seen.until('resized=43 132');
      // Job control: the terminal is the shell's controlling terminal, so Ctrl-C reaches the foreground job.
      terminal.write('sleep 30\r');
      await new Promise((resolve) => setTimeout(resolve, 300));
      terminal.write('\x03');
      terminal.write('echo "after=$?"\r');
      await seen.until('after=130');
    } finally {
      terminal.kill();
    }
    const exit = await terminal.finished;
    expect(exit.killed).toBe(true);
  });

  it('ends with everything it started when killed: a background job included', async () => {
    const terminal = await spawnPty((await terminalLaunch()).plan, { cols: 80, rows: 24 });
    const seen = screen(terminal);
    terminal.write('sleep 1000 & echo "started=$!"\r');
    await seen.until(/started=\d+/);
    expect(processesOfUid(UID)).toContain('sleep');
    terminal.kill();
    await terminal.finished;
    const deadline = Date.now() + 5000;
    while (processesOfUid(UID) !== '' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(processesOfUid(UID)).toBe('');
  });

  it("reports the shell's own ending through bwrap's status when it exits by itself", async () => {
    const terminal = await spawnPty((await terminalLaunch()).plan, { cols: 80, rows: 24 });
    terminal.write('exit 7\r');
    const exit = await terminal.finished;
    expect(exit.killed).toBe(false);
    expect(exit.status).toContain('"exit-code": 7');
  });
});
