/**
 * The built `npm start` launcher: it refuses to start without PostgreSQL or NATS (one line, exit 1, at
 * once), and shows the services' JSON log lines human-readable when asked to (LOG_FORMAT=pretty, as on a
 * terminal) while a pipe gets the JSON lines as they are.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, killProcess, testNatsPrefix } from '@interns/testing';

const START = resolve('dist/apps/admin/src/start.js');
const POSTGRES_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

const running = new Set<number>();

function runLauncher(env: Record<string, string>): Promise<Exit> {
  const { NODE_OPTIONS: _jestOnly, LOG_FORMAT: _chosenHere, ...inherited } = process.env;
  return new Promise((done, fail) => {
    const started = Date.now();
    const child = spawn(process.execPath, [START], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) running.add(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => {
      if (child.pid !== undefined) running.delete(child.pid);
      done({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** A URL whose port nothing listens on (it was free a moment ago). */
async function closedUrl(scheme: string): Promise<{ url: string; at: string }> {
  const port = await freePort();
  return { url: `${scheme}://127.0.0.1:${port}`, at: `127.0.0.1:${port}` };
}

describe('npm start (built launcher)', () => {
  beforeAll(() => {
    if (!existsSync(START)) throw new Error(`${START} is missing: run "npm run build" before this spec`);
  });

  afterAll(() => {
    for (const pid of running) killProcess(pid, 'SIGKILL');
  });

  describe('without PostgreSQL or NATS', () => {
    it('prints one line naming PostgreSQL, where and how to start it, and exits 1 at once', async () => {
      const postgres = await closedUrl('postgres');
      const result = await runLauncher({ DATABASE_URL: `${postgres.url}/interns`, NATS_URL });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `PostgreSQL is not reachable on ${postgres.at} (DATABASE_URL; connection refused): start it there, on Debian: ` +
          'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n',
      );
      expect(result.ms).toBeLessThan(5000);
    });

    it('prints one line naming NATS, where and how to start it with JetStream, and exits 1 at once', async () => {
      const nats = await closedUrl('nats');
      const result = await runLauncher({ DATABASE_URL: POSTGRES_URL, NATS_URL: nats.url });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `NATS is not reachable on ${nats.at} (NATS_URL; connection refused): start it there with JetStream: nats-server -js -a 127.0.0.1 -p ${nats.at.split(':')[1]}\n`,
      );
      expect(result.ms).toBeLessThan(5000);
    });

    it('prints one line each when both are missing', async () => {
      const [postgres, nats] = [await closedUrl('postgres'), await closedUrl('nats')];
      const result = await runLauncher({ DATABASE_URL: `${postgres.url}/interns`, NATS_URL: nats.url });
      expect(result.code).toBe(1);
      expect(result.stderr.split('\n')).toEqual([expect.stringMatching(/^PostgreSQL is not reachable/), expect.stringMatching(/^NATS is not reachable/), '']);
    });
  });

  describe("the services' logs", () => {
    let dataDir: string;
    let env: Record<string, string>;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'interns-start-'));
      // PostgreSQL and NATS answer, but the database refuses the role: every service logs why it cannot
      // start and exits, which ends the launcher (exit 1) without creating or migrating anything.
      const refused = new URL(POSTGRES_URL);
      refused.username = 'interns_start_spec_no_such_role';
      refused.pathname = '/interns_start_spec_never_created';
      env = {
        DATABASE_URL: refused.toString(),
        NATS_URL,
        NATS_PREFIX: testNatsPrefix(),
        DATA_DIR: dataDir,
        GATEWAY_PORT: String(await freePort()),
        LIFECYCLE_PORT: String(await freePort()),
        RUNS_PORT: String(await freePort()),
        ANALYTICS_PORT: String(await freePort()),
        WEBHOOKS_PORT: String(await freePort()),
      };
    });

    afterAll(async () => {
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    const logLines = (stdout: string) => stdout.split('\n').filter((line) => line.trim() !== '');

    it('are JSON lines when stdout is not a terminal', async () => {
      const result = await runLauncher(env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^(lifecycle|runs|analytics|webhooks|gateway) exited \(1\); stopping the others$/m);
      const lines = logLines(result.stdout);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(JSON.parse(line)).toMatchObject({ level: expect.any(String), service: expect.any(String) });
      expect(lines.map((line) => JSON.parse(line))).toContainEqual(expect.objectContaining({ level: 'fatal', msg: expect.stringContaining('failed to start') }));
    }, 60_000);

    it('are human-readable lines with LOG_FORMAT=pretty (what a terminal gets)', async () => {
      const result = await runLauncher({ ...env, LOG_FORMAT: 'pretty' });
      expect(result.code).toBe(1);
      const lines = logLines(result.stdout);
      expect(lines).toContainEqual(expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] FATAL: (lifecycle|runs|analytics|webhooks|gateway) .*failed to start/));
      expect(result.stdout).toContain('interns_start_spec_no_such_role');
      expect(lines.filter((line) => line.startsWith('{"level"'))).toEqual([]);
    }, 60_000);
  });
});
