/**
 * Migrations as a separate step (compose `migrations` service, Kubernetes Job): `admin db-setup` creates the
 * services' roles and `main.js migrate` applies an app's schema and exits, and a service started with
 * RUN_MIGRATIONS=false (as its own role, as deployed) neither listens nor serves until that step has run, and
 * gives up with a clear message after MIGRATIONS_WAIT_MS.
 * Runs the built apps (`npm run build` first), against a database of its own.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { serviceDatabaseUrl } from '@interns/database';
import { createTestDatabase, freePort, TestDatabase, testNatsPrefix, waitForHttp } from '@interns/testing';
import { appEntry, NodeRun, runNode, runProcess, startNode } from './node-process';

/** Each app's schema (the gateway owns `identity`) and its port variable. */
const APPS = [
  { app: 'gateway', schema: 'identity', portVariable: 'GATEWAY_PORT' },
  { app: 'lifecycle', schema: 'lifecycle', portVariable: 'LIFECYCLE_PORT' },
  { app: 'runs', schema: 'runs', portVariable: 'RUNS_PORT' },
  { app: 'analytics', schema: 'analytics', portVariable: 'ANALYTICS_PORT' },
  { app: 'webhooks', schema: 'webhooks', portVariable: 'WEBHOOKS_PORT' },
  { app: 'egress', schema: 'egress', portVariable: 'EGRESS_PORT' },
] as const;

/** Generous: the machine is shared and each node start loads the whole app. */
const PROCESS_TIMEOUT_MS = 60_000;
const WAITING_LOG = 'pending migration';

async function recordedMigrations(url: string, schema: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(`SELECT name FROM "${schema}"."${schema}_migrations" ORDER BY id`);
    return rows.map((row) => row.name);
  } finally {
    await client.end();
  }
}

/** The names a first `migrate` run reports: `<app>: schema "<schema>": applied N migration(s): A, B`. */
function appliedNames(stdout: string): string[] {
  const match = /applied (\d+) migration\(s\): (.+)$/m.exec(stdout);
  if (!match) throw new Error(`no "applied" line in: ${stdout}`);
  const names = match[2].split(', ');
  expect(names).toHaveLength(Number(match[1]));
  return names;
}

async function connectionRefused(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
    await response.body?.cancel();
    return false;
  } catch (error) {
    return (error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
  }
}

describe('migrate command', () => {
  const databases: TestDatabase[] = [];
  const running: NodeRun[] = [];
  let dataDir: string;

  beforeAll(async () => {
    for (const { app } of APPS) {
      if (!existsSync(appEntry(app))) throw new Error(`${appEntry(app)} is missing: run "npm run build" first`);
    }
    dataDir = await mkdtemp(join(tmpdir(), 'interns-migrate-spec-'));
  });

  afterAll(async () => {
    await Promise.all(running.map((run) => run.stop('SIGKILL')));
    await Promise.all(databases.map((db) => db.drop()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function freshDatabase(): Promise<TestDatabase> {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  }

  it(
    'applies every app schema on a fresh database, and a second run is a no-op',
    async () => {
      const db = await freshDatabase();
      const env = { DATABASE_URL: db.url };
      // All at once, as the migrations container may be run beside a service that migrates itself.
      const first = await Promise.all(APPS.map(({ app }) => runNode(appEntry(app), ['migrate'], env)));
      for (const [index, { app, schema }] of APPS.entries()) {
        const result = first[index];
        expect({ app, code: result.code, stderr: result.stderr }).toEqual({ app, code: 0, stderr: '' });
        const applied = appliedNames(result.stdout);
        expect(applied.length).toBeGreaterThan(0);
        expect(await recordedMigrations(db.url, schema)).toEqual(applied);
      }

      for (const { app, schema } of APPS) {
        const before = await recordedMigrations(db.url, schema);
        const again = await runNode(appEntry(app), ['migrate'], env);
        expect({ app, code: again.code, stdout: again.stdout }).toEqual({
          app,
          code: 0,
          stdout: `${app}: schema "${schema}" is up to date\n`,
        });
        expect(await recordedMigrations(db.url, schema)).toEqual(before);
      }
    },
    PROCESS_TIMEOUT_MS * 3,
  );

  it(
    "the image's entry point: APP=migrations migrates every schema, APP=<app> passes its arguments on, an unknown APP is refused",
    async () => {
      // The image's layout: /app/{entrypoint.sh,migrate-all.sh,dist} with /app as the working directory.
      const image = await mkdtemp(join(tmpdir(), 'interns-image-'));
      try {
        for (const script of ['entrypoint.sh', 'migrate-all.sh']) await copyFile(join('deploy/docker', script), join(image, script));
        await symlink(resolve('dist'), join(image, 'dist'));
        const db = await freshDatabase();
        const entrypoint = (env: Record<string, string>, args: string[] = []) =>
          runProcess('sh', [join(image, 'entrypoint.sh'), ...args], { DATABASE_URL: db.url, ...env }, image);

        const all = await entrypoint({ APP: 'migrations' });
        expect({ code: all.code, stderr: all.stderr }).toEqual({ code: 0, stderr: '' });
        // The roles first (admin db-setup's JSON line), then the schemas.
        expect(all.stdout.split('\n')[0]).toContain(`"role":"${db.name}_runs"`);
        for (const { app, schema } of APPS) {
          expect(all.stdout).toContain(`${app}: schema "${schema}": applied `);
          expect((await recordedMigrations(db.url, schema)).length).toBeGreaterThan(0);
        }
        expect(all.stdout).toMatch(/all schemas migrated\n$/);

        const one = await entrypoint({ APP: 'runs' }, ['migrate']);
        expect({ code: one.code, stdout: one.stdout }).toEqual({ code: 0, stdout: 'runs: schema "runs" is up to date\n' });

        const unknown = await entrypoint({ APP: 'nonsense' });
        expect(unknown.code).toBe(64);
        expect(unknown.stderr).toContain('unknown APP "nonsense"');
      } finally {
        await rm(image, { recursive: true, force: true });
      }
    },
    PROCESS_TIMEOUT_MS * 2,
  );

  it(
    'exits 1 with the error on stderr when the database cannot be reached, and refuses unknown commands',
    async () => {
      const unreachable = await runNode(appEntry('runs'), ['migrate'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/interns_test_none' });
      expect(unreachable.code).toBe(1);
      expect(unreachable.stderr).toMatch(/^runs: migrating schema "runs" failed: .*ECONNREFUSED/);

      const typo = await runNode(appEntry('runs'), ['migrat'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/interns_test_none' });
      expect(typo.code).toBe(1);
      // The service log may be JSON, which escapes the quotes.
      expect(typo.stdout + typo.stderr).toMatch(/unknown command \\?"migrat\\?"/);
    },
    PROCESS_TIMEOUT_MS,
  );

  it(
    'with RUN_MIGRATIONS=false a service (as its own role) does not listen on an unmigrated schema, and serves once the migrate step ran',
    async () => {
      const db = await freshDatabase();
      // As deployed: the roles exist before anything is migrated, and each service connects as its own.
      expect((await runNode(appEntry('admin'), ['db-setup'], { DATABASE_URL: db.url })).code).toBe(0);
      // The gateway has its own bootstrap; analytics stands for the services built on bootstrapService.
      const waiting = await Promise.all(
        APPS.filter(({ app }) => app === 'gateway' || app === 'analytics').map(async ({ app, portVariable }) => {
          const port = await freePort();
          const env = {
            DATABASE_URL: serviceDatabaseUrl(db.url, app),
            NATS_PREFIX: testNatsPrefix(),
            DATA_DIR: dataDir,
            RUN_MIGRATIONS: 'false',
            [portVariable]: String(port),
          };
          const service = startNode(appEntry(app), [], env);
          running.push(service);
          return { app, port, service };
        }),
      );

      for (const { port, service } of waiting) {
        await service.waitForOutput(WAITING_LOG, PROCESS_TIMEOUT_MS);
        expect(await connectionRefused(`http://127.0.0.1:${port}/health/live`)).toBe(true);
      }

      for (const { app } of waiting) {
        expect((await runNode(appEntry(app), ['migrate'], { DATABASE_URL: db.url })).code).toBe(0);
      }

      for (const { port, service } of waiting) {
        await waitForHttp(`http://127.0.0.1:${port}/health/ready`, {
          timeoutMs: PROCESS_TIMEOUT_MS,
          exited: service.exited.then((code) => ({ code, signal: null })),
          describe: () => service.stdout() + service.stderr(),
        });
        expect(await service.stop('SIGTERM')).toBe(0);
      }
    },
    PROCESS_TIMEOUT_MS * 3,
  );

  it(
    'with RUN_MIGRATIONS=false a service exits 1 after MIGRATIONS_WAIT_MS when nobody migrates',
    async () => {
      const db = await freshDatabase();
      const service = startNode(appEntry('analytics'), [], {
        DATABASE_URL: db.url,
        NATS_PREFIX: testNatsPrefix(),
        DATA_DIR: dataDir,
        RUN_MIGRATIONS: 'false',
        MIGRATIONS_WAIT_MS: '1500',
        ANALYTICS_PORT: String(await freePort()),
      });
      running.push(service);
      expect(await service.exited).toBe(1);
      const output = service.stdout() + service.stderr();
      expect(output).toContain(WAITING_LOG);
      expect(output).toMatch(/schema \\?"analytics\\?" has \d+ pending migration\(s\) .* after waiting 1500 ms \(MIGRATIONS_WAIT_MS\)/);
    },
    PROCESS_TIMEOUT_MS,
  );
});
