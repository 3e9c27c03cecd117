/**
 * Helpers of the CLI's end-to-end tests: a home of its own per test file (HOME and XDG_CONFIG_HOME in a temporary
 * directory, so the credentials file is the test's), the built CLI run as a real process, and the identities the
 * platform starts from.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Platform, PLATFORM_SERVICES } from '@interns/testing';

export const CLI_ENTRY = resolve('dist/apps/cli/src/main.js');

export const WORKSPACE = '51111111-1111-4111-8111-111111111111';
export const KEYS = { alice: 'uk_cli_alice', bob: 'uk_cli_bob', org: 'ok_cli_acme' } as const;

export const IDENTITIES = {
  organizations: [{ id: 'cli-acme', name: 'CLI Acme', programme: true, lifecycle_writes: true }],
  workspaces: [{ id: WORKSPACE, organization_id: 'cli-acme', name: 'main' }],
  members: [
    { id: 'alice', organization_id: 'cli-acme', active: true },
    { id: 'bob', organization_id: 'cli-acme', active: true },
  ],
  api_keys: [
    { key: KEYS.alice, kind: 'user', organization_id: 'cli-acme', workspace_id: WORKSPACE, member_id: 'alice' },
    { key: KEYS.bob, kind: 'user', organization_id: 'cli-acme', workspace_id: WORKSPACE, member_id: 'bob' },
    { key: KEYS.org, kind: 'organization', organization_id: 'cli-acme', workspace_id: WORKSPACE },
  ],
};

/**
 * The platform, its services started one after another (gateway first): on a machine shared with other test runs,
 * six processes loading at once can each miss the ready deadline. `beforeServices` runs once the gateway is up
 * (its port is then known, e.g. for INTERN_ORIGIN).
 */
export async function startPlatform(options: { env?: Record<string, string>; beforeServices?: (platform: Platform) => void } = {}): Promise<Platform> {
  const platform = await Platform.start({ env: options.env, services: [] });
  try {
    await platform.startService('gateway');
    options.beforeServices?.(platform);
    for (const service of PLATFORM_SERVICES.filter((name) => name !== 'gateway')) await platform.startService(service);
    await platform.applyIdentities(IDENTITIES);
  } catch (error) {
    await platform.stop();
    throw error;
  }
  return platform;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  raw: Buffer;
}

/** A user's home: where `interns` keeps its credentials, and the environment it runs with. */
export class CliHome {
  private constructor(readonly dir: string) {}

  static async create(): Promise<CliHome> {
    return new CliHome(await mkdtemp(join(tmpdir(), 'interns-cli-')));
  }

  get configDir(): string {
    return join(this.dir, 'config', 'interns');
  }

  get credentialsPath(): string {
    return join(this.configDir, 'credentials.json');
  }

  env(extra: Record<string, string> = {}): Record<string, string> {
    return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: this.dir, XDG_CONFIG_HOME: join(this.dir, 'config'), ...extra };
  }

  /** Runs `interns <args>` to its end (killed after `timeoutMs`), stdin from `input` (or empty). */
  run(args: string[], options: { input?: string | Buffer; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<CliResult> {
    const child = spawn(process.execPath, [CLI_ENTRY, ...args], { env: this.env(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.stdin.end(options.input ?? '');
    const timeoutMs = options.timeoutMs ?? 30_000;
    return new Promise((done, fail) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(new Error(`interns ${args.join(' ')} did not end within ${timeoutMs} ms; stderr: ${Buffer.concat(err).toString()}`));
      }, timeoutMs);
      child.on('error', fail);
      child.on('close', (code) => {
        clearTimeout(timer);
        const raw = Buffer.concat(out);
        done({ code, stdout: raw.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), raw });
      });
    });
  }

  /** Runs a `--json` command that must succeed; its stdout parsed. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the API's JSON, checked by each test
  async json<T = any>(args: string[], options: { input?: string; timeoutMs?: number } = {}): Promise<T> {
    const result = await this.run([...args, '--json'], options);
    if (result.code !== 0) throw new Error(`interns ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** The error envelope `--json` prints on stderr. */
export function envelopeOf(result: CliResult): { error: { code: number | null; message: string; metadata?: { reason: string; retryable: boolean } } } {
  return JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `interns` under a pseudo-terminal, as a person runs it: what it printed so far, keys typed, its exit. */
export class PtyRun {
  private output = '';
  readonly exited: Promise<{ exitCode: number; signal?: number }>;

  private constructor(private readonly terminal: import('@lydell/node-pty').IPty) {
    terminal.onData((data) => (this.output += data));
    this.exited = new Promise((resolve) => terminal.onExit(resolve));
  }

  static async start(home: CliHome, args: string[], size = { cols: 100, rows: 30 }): Promise<PtyRun> {
    const { spawn: spawnPty } = await import('@lydell/node-pty');
    return new PtyRun(spawnPty(process.execPath, [CLI_ENTRY, ...args], { name: 'xterm-256color', ...size, cwd: home.dir, env: home.env({ TERM: 'xterm-256color' }) }));
  }

  /** Everything printed, ANSI escapes removed. */
  text(): string {
    // eslint-disable-next-line no-control-regex -- terminal escapes are control characters
    return this.output.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]/g, '');
  }

  /** Waits until the printed text (after `from`) matches. */
  async until(needle: string | RegExp, options: { from?: number; timeoutMs?: number } = {}): Promise<number> {
    const deadline = Date.now() + (options.timeoutMs ?? 20_000);
    for (;;) {
      const text = this.text().slice(options.from ?? 0);
      const at = typeof needle === 'string' ? text.indexOf(needle) : text.search(needle);
      if (at >= 0) return (options.from ?? 0) + at;
      if (Date.now() > deadline) throw new Error(`not printed within the time: ${String(needle)}\n--- terminal ---\n${this.text()}`);
      await sleep(25);
    }
  }

  type(keys: string): void {
    this.terminal.write(keys);
  }

  resize(cols: number, rows: number): void {
    this.terminal.resize(cols, rows);
  }

  /** The exit, or a failure with what was printed when it does not come in time. */
  async exit(timeoutMs = 20_000): Promise<{ exitCode: number; signal?: number }> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        this.terminal.kill('SIGKILL');
        reject(new Error(`no exit within ${timeoutMs} ms\n--- terminal ---\n${this.text()}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
