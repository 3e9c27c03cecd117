import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatShellResult, runProcess, type ProcessLimits, type ProcessResult } from './process-runner';

type ShellResult = Omit<ProcessResult, 'fdOutputs'>;

/** `/bin/sh -c` in `cwd` with the environment the development runner gives (the process runner's own rules). */
async function runShell(options: ProcessLimits & { command: string; cwd: string }): Promise<ShellResult> {
  const { command, cwd, ...limits } = options;
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: cwd };
  const { fdOutputs: _fdOutputs, ...result } = await runProcess({ file: '/bin/sh', args: ['-c', command], cwd, env }, limits);
  return result;
}

const LIMITS = { timeoutMs: 5000, outputLimitBytes: 64 * 1024 };

/** Gone, or a zombie waiting for init to reap it: either way no longer running. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function waitUntilStopped(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 50; attempt++) {
    if (!isRunning(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

describe('runProcess', () => {
  let workspace: string;
  const run = (command: string, overrides: Partial<Parameters<typeof runShell>[0]> = {}) =>
    runShell({ command, cwd: workspace, signal: new AbortController().signal, ...LIMITS, ...overrides });

  beforeEach(async () => {
    workspace = realpathSync(await mkdtemp(join(tmpdir(), 'shell-tool-')));
  });
  afterEach(() => rm(workspace, { recursive: true, force: true }));

  it('runs in the given directory', async () => {
    await writeFile(join(workspace, 'notes.txt'), 'inside the workspace\n');
    const result = await run('pwd; cat notes.txt');
    expect(result).toEqual({
      output: `${workspace}\ninside the workspace\n`,
      exitCode: 0,
      timedOut: false,
      truncated: false,
      cancelled: false,
    });
  });

  it("never passes the service's environment, only PATH, LANG and HOME", async () => {
    process.env.SHELL_TOOL_SPEC_SECRET = 'do-not-leak';
    try {
      const { output } = await run('env');
      expect(output).not.toContain('SHELL_TOOL_SPEC_SECRET');
      expect(output).not.toContain('do-not-leak');
      expect(output).toContain(`HOME=${workspace}\n`);
      expect(output).toContain('LANG=C.UTF-8\n');
      expect(output).toContain(`PATH=${process.env.PATH}\n`);
    } finally {
      delete process.env.SHELL_TOOL_SPEC_SECRET;
    }
  });

  it('reports the exit code', async () => {
    expect(await run('exit 3')).toMatchObject({ exitCode: 3, timedOut: false, truncated: false, cancelled: false });
    expect(await run('true')).toMatchObject({ exitCode: 0 });
  });

  it('merges stderr into the output in arrival order', async () => {
    const { output } = await run('echo out; sleep 0.05; echo err >&2; sleep 0.05; echo out2');
    expect(output).toBe('out\nerr\nout2\n');
  });

  it('stops an endless writer once the output limit is exceeded', async () => {
    const started = Date.now();
    const result = await run('yes', { outputLimitBytes: 1000 });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result).toEqual({
      output: 'y\n'.repeat(500),
      exitCode: null,
      timedOut: false,
      truncated: true,
      cancelled: false,
    });
  });

  it('cuts truncated output on a UTF-8 character boundary', async () => {
    const result = await run("printf 'a\\303\\251\\303\\251'", { outputLimitBytes: 4 });
    expect(result).toMatchObject({ output: 'aé', truncated: true });
    const exact = await run("printf 'a\\303\\251'", { outputLimitBytes: 3 });
    expect(exact).toMatchObject({ output: 'aé', truncated: false });
  });

  it('kills a command that runs past its timeout, with everything it started', async () => {
    const started = Date.now();
    const result = await run('sleep 10 & echo $!; sleep 10', { timeoutMs: 200 });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result).toMatchObject({ exitCode: null, timedOut: true, truncated: false, cancelled: false });
    const backgroundPid = Number(result.output.trim());
    expect(backgroundPid).toBeGreaterThan(0);
    expect(await waitUntilStopped(backgroundPid)).toBe(true);
  });

  it('does not leave background jobs behind once the shell exits', async () => {
    const started = Date.now();
    const result = await run('sleep 10 & echo $!');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    expect(await waitUntilStopped(Number(result.output.trim()))).toBe(true);
  });

  it('does not wait for a process that left the group and holds the output pipe', async () => {
    const started = Date.now();
    // The pause lets setsid take the sleep out of the group before the shell exits.
    const result = await run('setsid sleep 10 & echo $!; sleep 0.2');
    const escapedPid = Number(result.output.trim());
    try {
      expect(Date.now() - started).toBeLessThan(2000);
      expect(result).toMatchObject({ exitCode: 0, timedOut: false });
      expect(isRunning(escapedPid)).toBe(true);
    } finally {
      if (escapedPid > 0) process.kill(escapedPid, 'SIGKILL');
    }
  });

  it('kills the command when the signal aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const result = await run('sleep 10', { signal: controller.signal });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result).toMatchObject({ exitCode: null, timedOut: false, cancelled: true });
  });

  it('does not start at all on an aborted signal', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await run('touch started', { signal: controller.signal });
    expect(result).toMatchObject({ cancelled: true, exitCode: null });
    expect(existsSync(join(workspace, 'started'))).toBe(false);
  });

  it('rejects when the process cannot start', async () => {
    await expect(run('true', { cwd: join(workspace, 'missing') })).rejects.toThrow(/ENOENT/);
  });
});

describe('formatShellResult', () => {
  const result = (overrides: Partial<ShellResult>): ShellResult => ({
    output: '',
    exitCode: 0,
    timedOut: false,
    truncated: false,
    cancelled: false,
    ...overrides,
  });
  const limits = { timeoutMs: 30000, outputLimitBytes: 65536 };

  it('is the bare output for a successful command', () => {
    expect(formatShellResult(result({ output: 'a.txt\nb.txt\n' }), limits)).toBe('a.txt\nb.txt\n');
  });

  it('puts each note on its own line after the output', () => {
    expect(formatShellResult(result({ output: 'oops', exitCode: 2 }), limits)).toBe('oops\n[exit code 2]');
    expect(formatShellResult(result({ output: 'oops\n', exitCode: 2 }), limits)).toBe('oops\n[exit code 2]');
    expect(formatShellResult(result({ output: 'yyy', exitCode: null, truncated: true }), limits)).toBe(
      'yyy\n[output truncated at 65536 bytes]',
    );
    expect(formatShellResult(result({ exitCode: null, timedOut: true }), limits)).toBe('[timed out after 30000 ms]');
  });
});
