import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { decodeProtectedHeader } from 'jose';
import { createTestDatabase, TestDatabase, testNatsPrefix } from '@interns/testing';

/** The built command, exactly as `npm run admin -- ...` runs it. */
const MAIN = resolve('dist/apps/admin/src/main.js');
const WS = '3e3e3e3e-0000-4000-8000-00000000000a';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

describe('admin main (built CLI)', () => {
  let db: TestDatabase;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  const run = (...args: string[]) =>
    new Promise<Exit>((done, fail) => {
      const started = Date.now();
      // In the spec's own directory: a developer's .env in the clone must not reach it.
      const child = spawn(process.execPath, [MAIN, ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('error', fail);
      child.on('close', (code) => done({ code, stdout, stderr, ms: Date.now() - started }));
    });

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" before this spec`);
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'interns-admin-main-'));
    const { NODE_OPTIONS: _jestOnly, ...inherited } = process.env;
    env = { ...inherited, DATABASE_URL: db.url, DATA_DIR: join(dir, 'data'), NATS_PREFIX: testNatsPrefix() };
    await writeFile(
      join(dir, 'identity.json'),
      JSON.stringify({
        organizations: [{ id: 'org-main', name: 'Main', programme: true, lifecycle_writes: true }],
        workspaces: [{ id: WS, organization_id: 'org-main', name: 'main' }],
        members: [{ id: 'mia', organization_id: 'org-main', active: true }],
        api_keys: [{ key: 'main-spec-user', kind: 'user', organization_id: 'org-main', workspace_id: WS, member_id: 'mia' }],
      }),
    );
  });

  afterAll(async () => {
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prints JSON, exits 0 and exits promptly', async () => {
    const result = await run('apply', join(dir, 'identity.json'));
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(result.stdout)).toEqual({
      organizations: 1,
      workspaces: 1,
      members: 1,
      api_keys: 1,
      deactivated_members: [],
      organizations_left_programme: [],
      revoked_daemon_tokens: 0,
    });
    // The unref'd safety exit fires at 10 s; finishing well before it means nothing was left open.
    expect(result.ms).toBeLessThan(8000);
  });

  it('exits 1 with one line on stderr on errors', async () => {
    for (const args of [['nope'], [], ['apply', join(dir, 'missing.json')], ['chatapp-installed', '--workspace', 'x']]) {
      const result = await run(...args);
      expect(result).toMatchObject({ code: 1, stdout: '' });
      expect(result.stderr).toMatch(/^error: [^\n]+\n$/);
    }
  });

  it('gives every racing process the same development signing key', async () => {
    const args = ['oauth-token', '--member', 'mia', '--workspace', WS, '--scope', 'interns'];
    const results = await Promise.all([run(...args), run(...args), run(...args), run(...args)]);
    for (const result of results) expect(result).toMatchObject({ code: 0, stderr: '' });
    const kids = results.map((result) => decodeProtectedHeader(JSON.parse(result.stdout).access_token).kid);
    expect(new Set(kids).size).toBe(1);
  });
});
