/**
 * The built `npm start` launcher: it refuses to start without PostgreSQL or NATS (one line, exit 1, at
 * once), reads `.env` under the environment, creates the services' database roles and starts each service as its
 * own role (pg_stat_activity), says when each service is ready (the gateway last) and where the API is, and shows
 * the services' JSON log lines human-readable when asked to (LOG_FORMAT=pretty, as on a terminal) while a pipe
 * gets the JSON lines as they are.
 */
import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { SERVICE_NAMES } from '@interns/contracts';
import { createTestDatabase, deleteTestStreams, freePort, killProcess, TestDatabase, testNatsPrefix } from '@interns/testing';

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

interface Launcher {
  child: ChildProcessWithoutNullStreams;
  /** What it wrote on stderr so far (its own lines). */
  stderr: () => string;
  exit: Promise<Exit>;
}

/**
 * The launcher, started in `cwd` (default: an empty directory, so a developer's `.env` in the clone stays out);
 * `exit` settles once it has exited and its output is complete. `unset` names inherited variables to leave out.
 */
function startLauncher(env: Record<string, string>, options: { cwd?: string; unset?: string[] } = {}): Launcher {
  const { NODE_OPTIONS: _jestOnly, LOG_FORMAT: _chosenHere, ...inherited } = process.env;
  for (const name of options.unset ?? []) delete inherited[name];
  const started = Date.now();
  const child = spawn(process.execPath, [START], { cwd: options.cwd ?? tmpdir(), env: { ...inherited, ...env }, stdio: 'pipe' });
  child.stdin.end();
  if (child.pid !== undefined) running.add(child.pid);
  let stdout = '';
  let stderr = '';
  const exit = new Promise<Exit>((done, fail) => {
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => {
      if (child.pid !== undefined) running.delete(child.pid);
      done({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
  return { child, stderr: () => stderr, exit };
}

function runLauncher(env: Record<string, string>, options: { cwd?: string; unset?: string[] } = {}): Promise<Exit> {
  return startLauncher(env, options).exit;
}

/** Every service's ports, free a moment ago. */
async function servicePorts(): Promise<Record<string, string>> {
  return {
    GATEWAY_PORT: String(await freePort()),
    LIFECYCLE_PORT: String(await freePort()),
    RUNS_PORT: String(await freePort()),
    ANALYTICS_PORT: String(await freePort()),
    WEBHOOKS_PORT: String(await freePort()),
    EGRESS_PORT: String(await freePort()),
    // runs' file transfer port (npm start's 8086 may be taken on a shared machine).
    FILE_TRANSFER_PORT: String(await freePort()),
  };
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

    it('reads .env in its working directory for what the environment leaves unset', async () => {
      const postgres = await closedUrl('postgres');
      const project = await mkdtemp(join(tmpdir(), 'interns-start-env-'));
      try {
        await writeFile(join(project, '.env'), `DATABASE_URL=${postgres.url}/interns\nNATS_URL=${NATS_URL}\n`);
        const result = await runLauncher({}, { cwd: project, unset: ['DATABASE_URL', 'MIGRATIONS_DATABASE_URL', 'NATS_URL'] });
        expect(result.code).toBe(1);
        expect(result.stderr.split('\n')).toEqual([
          `npm start: settings from the environment and ${join(project, '.env')} (the environment wins)`,
          expect.stringMatching(new RegExp(`^PostgreSQL is not reachable on ${postgres.at} \\(DATABASE_URL; connection refused\\)`)),
          '',
        ]);
      } finally {
        await rm(project, { recursive: true, force: true });
      }
    });

    it('prints one line each when both are missing', async () => {
      const [postgres, nats] = [await closedUrl('postgres'), await closedUrl('nats')];
      const result = await runLauncher({ DATABASE_URL: `${postgres.url}/interns`, NATS_URL: nats.url });
      expect(result.code).toBe(1);
      expect(result.stderr.split('\n')).toEqual([expect.stringMatching(/^PostgreSQL is not reachable/), expect.stringMatching(/^NATS is not reachable/), '']);
    });
  });

  describe('with PostgreSQL and NATS', () => {
    let db: TestDatabase;
    let dataDir: string;
    let env: Record<string, string>;

    beforeAll(async () => {
      db = await createTestDatabase();
      dataDir = await mkdtemp(join(tmpdir(), 'interns-start-'));
      env = { DATABASE_URL: db.url, NATS_URL, NATS_PREFIX: testNatsPrefix(), DATA_DIR: dataDir, ...(await servicePorts()) };
    });

    afterAll(async () => {
      await deleteTestStreams(env.NATS_PREFIX, NATS_URL).catch(() => undefined);
      // Drops the roles the launcher created too (TestDatabase.drop).
      await db?.drop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    it('creates the database roles, starts each service as its own role, none as the owner, and says when each is ready', async () => {
      const launcher = startLauncher(env);
      try {
        const seen = new Map<string, Set<string>>();
        const admin = new pg.Client({ connectionString: db.url });
        await admin.connect();
        try {
          // Each service connects once migrated (its migrations run as the owner, named `<service>-migrate`); idle
          // connections close after a while, so look until every service was seen serving.
          const serving = () => SERVICE_NAMES.filter((service) => seen.has(service)).length;
          for (let attempt = 0; attempt < 120 && serving() < SERVICE_NAMES.length; attempt++) {
            await sleep(500);
            const { rows } = await admin.query<{ usename: string; application_name: string }>(
              `SELECT usename, application_name FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
            );
            for (const { usename, application_name } of rows) seen.set(application_name, (seen.get(application_name) ?? new Set()).add(usename));
          }
        } finally {
          await admin.end();
        }
        const services = [...seen].filter(([name]) => (SERVICE_NAMES as readonly string[]).includes(name));
        expect(Object.fromEntries(services.map(([name, users]) => [name, [...users]]))).toEqual(
          Object.fromEntries(SERVICE_NAMES.map((service) => [service, [`${db.name}_${service}`]])),
        );
        for (let attempt = 0; attempt < 240 && !launcher.stderr().includes('npm start: ready:'); attempt++) await sleep(250);
        const lines = launcher.stderr().split('\n').filter((line) => /^npm start: (\w+ ready on :|ready: )/.test(line));
        const readyLine = (service: string) => `npm start: ${service} ready on :${env[`${service.toUpperCase()}_PORT`]}`;
        // The others in the order they became ready; the gateway (its API needs them) last, then where to go.
        expect(lines.slice(0, 5).sort()).toEqual(['analytics', 'egress', 'lifecycle', 'runs', 'webhooks'].map(readyLine));
        expect(lines.slice(5)).toEqual([
          readyLine('gateway'),
          `npm start: ready: API http://localhost:${env.GATEWAY_PORT}/api/v1 | console http://localhost:${env.GATEWAY_PORT}/console/ | first time? npm run admin -- quickstart`,
        ]);
      } finally {
        launcher.child.kill('SIGTERM');
      }
      const result = await launcher.exit;
      expect(result.stderr).toContain(`npm start: database "${db.name}": services connect as ${SERVICE_NAMES.map((service) => `${db.name}_${service}`).join(', ')}\n`);
    }, 120_000);

    it('prints one line and exits 1 when the roles cannot be created', async () => {
      // Refused by PostgreSQL (no such owner), so nothing is started.
      const refused = new URL(db.url);
      refused.username = 'interns_start_spec_no_such_role';
      const result = await runLauncher({ ...env, DATABASE_URL: refused.toString() });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^npm start: creating the services' database roles \(admin db-setup\) failed: .*interns_start_spec_no_such_role.*\n$/);
    }, 60_000);
  });

  describe("the services' logs", () => {
    let db: TestDatabase;
    let dataDir: string;
    let env: Record<string, string>;

    beforeAll(async () => {
      db = await createTestDatabase();
      dataDir = await mkdtemp(join(tmpdir(), 'interns-start-'));
      // PostgreSQL and NATS answer and the roles are made, but every service refuses a setting: each logs why it
      // cannot start and exits, which ends the launcher (exit 1) before anything is migrated.
      env = {
        DATABASE_URL: db.url,
        LOG_LEVEL: 'interns_start_spec_bad_level',
        NATS_URL,
        NATS_PREFIX: testNatsPrefix(),
        DATA_DIR: dataDir,
        ...(await servicePorts()),
      };
    });

    afterAll(async () => {
      await db?.drop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    const logLines = (stdout: string) => stdout.split('\n').filter((line) => line.trim() !== '');

    it('are JSON lines when stdout is not a terminal', async () => {
      const result = await runLauncher(env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^(lifecycle|egress|runs|analytics|webhooks|gateway) exited \(1\); stopping the others$/m);
      const lines = logLines(result.stdout);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(JSON.parse(line)).toMatchObject({ level: expect.any(String), service: expect.any(String) });
      expect(lines.map((line) => JSON.parse(line))).toContainEqual(expect.objectContaining({ level: 'fatal', msg: expect.stringContaining('failed to start') }));
    }, 60_000);

    it('are human-readable lines with LOG_FORMAT=pretty (what a terminal gets)', async () => {
      const result = await runLauncher({ ...env, LOG_FORMAT: 'pretty' });
      expect(result.code).toBe(1);
      const lines = logLines(result.stdout);
      expect(lines).toContainEqual(expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] FATAL: (lifecycle|egress|runs|analytics|webhooks|gateway) .*failed to start/));
      expect(result.stdout).toContain('interns_start_spec_bad_level');
      expect(lines.filter((line) => line.startsWith('{"level"'))).toEqual([]);
    }, 60_000);
  });
});
