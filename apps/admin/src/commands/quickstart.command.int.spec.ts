/**
 * `admin quickstart` on a database of its own: run twice it leaves one identity (one organization, workspace and
 * member, one working key), its key is what the gateway's credential lookup accepts, `--new-key` replaces the key,
 * and it says which database and prefix it acted on. The built command reads `.env` under the environment.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { CredentialResolver, IDENTITY_SCHEMA, identityMigrations } from '@interns/identity';
import { createTestDatabase, TestDatabase, testNatsPrefix } from '@interns/testing';
import { runAdmin } from '../admin.cli';
import { QUICKSTART_IDENTITY } from './quickstart.command';

const MAIN = resolve('dist/apps/admin/src/main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('admin quickstart', () => {
  let db: TestDatabase;
  let dir: string;
  let env: Record<string, string>;
  let dataSource: DataSource | undefined;

  const admin = async (argv: string[], extra: Record<string, string> = {}): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const code = await runAdmin(argv, { ...env, ...extra }, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), envFile: null });
    return { code, stdout, stderr };
  };
  const json = (run: Run) => {
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(run.stdout);
  };
  const identity = async () => {
    dataSource ??= await openDatabase({ url: db.url, schema: IDENTITY_SCHEMA, migrations: identityMigrations, applicationName: 'quickstart.spec', migrate: false });
    return dataSource;
  };
  const lookUp = async (key: string) =>
    new CredentialResolver({
      dataSource: await identity(),
      cacheTtlMs: 0,
      oidc: { issuer: null, jwksUrl: null, jwksFile: null, keysDir: join(dir, 'keys'), localDev: false },
    }).resolve(`Bearer ${key}`);

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'interns-quickstart-'));
    env = { DATABASE_URL: db.url, NATS_URL: 'nats://127.0.0.1:4222', NATS_PREFIX: testNatsPrefix(), DATA_DIR: join(dir, 'data'), GATEWAY_PORT: '18080' };
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('run twice gives one identity, whose key the credential lookup accepts as a member of the workspace', async () => {
    const first = json(await admin(['quickstart', '--json']));
    expect(first).toMatchObject({
      database: db.name,
      database_server: '127.0.0.1:5432',
      nats_prefix: env.NATS_PREFIX,
      env_file: null,
      organization: { id: QUICKSTART_IDENTITY.organizationId, created: true },
      workspace: { id: QUICKSTART_IDENTITY.workspaceId, created: true },
      member: { id: QUICKSTART_IDENTITY.memberId, created: true },
      key: expect.stringMatching(/^uk_[A-Za-z0-9_-]{32}$/),
      key_status: 'created',
      api_url: 'http://localhost:18080/api/v1',
    });
    expect(first.try).toEqual([
      `npm run interns -- login --key ${first.key} --api http://localhost:18080/api/v1`,
      'npm run interns -- create demo --provision --wait',
      'npm run interns -- chat demo "hello"',
      expect.stringContaining(`curl -s -X POST http://localhost:18080/api/v1/interns -H "Authorization: Bearer ${first.key}"`),
    ]);
    expect(await lookUp(first.key)).toMatchObject({
      kind: 'user',
      memberId: QUICKSTART_IDENTITY.memberId,
      workspaceId: QUICKSTART_IDENTITY.workspaceId,
      organizationId: QUICKSTART_IDENTITY.organizationId,
      memberActive: true,
      organization: { programme: true, lifecycleWrites: true, chatappInstallRequired: false },
    });

    const second = json(await admin(['quickstart', '--json']));
    expect(second).toMatchObject({
      organization: { created: false },
      workspace: { created: false },
      member: { created: false },
      key: null,
      key_status: 'exists',
      disabled_keys: 0,
    });
    expect(second.try[0]).toBe('npm run interns -- login --key <key> --api http://localhost:18080/api/v1');
    const rows = await (await identity()).query(
      `SELECT (SELECT count(*) FROM identity.organizations)::int AS organizations, (SELECT count(*) FROM identity.workspaces)::int AS workspaces,
              (SELECT count(*) FROM identity.members)::int AS members, (SELECT count(*) FROM identity.api_keys WHERE NOT disabled)::int AS keys`,
    );
    expect(rows).toEqual([{ organizations: 1, workspaces: 1, members: 1, keys: 1 }]);
    expect(await lookUp(first.key)).toMatchObject({ kind: 'user', memberId: QUICKSTART_IDENTITY.memberId });
  });

  it('says where it acted and what to try, in words without --json; a rerun says how to get a new key', async () => {
    const run = await admin(['quickstart']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain(`Quickstart on database "${db.name}" on 127.0.0.1:5432, NATS prefix "${env.NATS_PREFIX}" on 127.0.0.1:4222 (settings: the environment):`);
    expect(run.stdout).toMatch(/^ {2}organization +quickstart +already there$/m);
    expect(run.stdout).toMatch(/^ {2}user key +- +one exists \(made .+\); not shown: stored only as a hash$/m);
    expect(run.stdout).toContain('A new key (the current one stops working): npm run admin -- quickstart --new-key');
    expect(run.stdout).toContain('  npm run interns -- chat demo "hello"\n');
  });

  it('--new-key mints a key that works and disables the earlier one', async () => {
    const [before] = await (await identity()).query<{ id: string }[]>('SELECT id::text FROM identity.api_keys WHERE NOT disabled');
    const renewed = json(await admin(['quickstart', '--new-key', '--json']));
    expect(renewed).toMatchObject({ key: expect.stringMatching(/^uk_/), key_status: 'replaced', disabled_keys: 1 });
    expect(await lookUp(renewed.key)).toMatchObject({ kind: 'user', memberId: QUICKSTART_IDENTITY.memberId });
    const keys = await (await identity()).query<{ id: string; disabled: boolean }[]>('SELECT id::text, disabled FROM identity.api_keys ORDER BY created_at');
    expect(keys).toEqual([
      { id: before?.id, disabled: true },
      { id: expect.any(String), disabled: false },
    ]);
    const text = await admin(['quickstart', '--new-key']);
    expect(text.stdout).toMatch(/^ {2}user key +uk_\S+ +replaces 1 earlier key\(s\), now disabled: shown this once, keep it$/m);
  });

  it('refuses in production, and unknown flags', async () => {
    const refused = await admin(['quickstart'], { NODE_ENV: 'production' });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/^error: quickstart: refused with NODE_ENV=production/);
    expect((await admin(['quickstart', '--key', 'x'])).stderr).toMatch(/^error: quickstart: Unknown option '--key'/);
  });

  describe('built, reading .env as npm start does', () => {
    const runBuilt = (cwd: string, extra: Record<string, string>) =>
      new Promise<Run>((done, fail) => {
        const { NODE_OPTIONS: _jestOnly, DATABASE_URL: _a, NATS_PREFIX: _b, DATA_DIR: _c, GATEWAY_PORT: _d, ...inherited } = process.env;
        const child = spawn(process.execPath, [MAIN, 'quickstart', '--json'], { cwd, env: { ...inherited, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk) => (stdout += chunk));
        child.stderr.on('data', (chunk) => (stderr += chunk));
        child.on('error', fail);
        child.on('close', (code) => done({ code, stdout, stderr }));
      });

    it('takes its settings from .env in the working directory, the environment winning', async () => {
      if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" before this spec`);
      const project = join(dir, 'project');
      await mkdir(project);
      const fromFile = testNatsPrefix();
      await writeFile(
        join(project, '.env'),
        `# what npm start would read too\nDATABASE_URL=${db.url}\nNATS_PREFIX=${fromFile}\nDATA_DIR="${join(dir, 'data')}"\nGATEWAY_PORT=18081\n`,
      );
      const fromFileRun = await runBuilt(project, {});
      expect(fromFileRun).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(fromFileRun.stdout)).toMatchObject({
        database: db.name,
        nats_prefix: fromFile,
        env_file: join(project, '.env'),
        api_url: 'http://localhost:18081/api/v1',
        key_status: 'exists',
      });

      const overridden = testNatsPrefix();
      const fromEnvironment = await runBuilt(project, { NATS_PREFIX: overridden });
      expect(JSON.parse(fromEnvironment.stdout)).toMatchObject({ database: db.name, nats_prefix: overridden, api_url: 'http://localhost:18081/api/v1' });
    });
  });
});
