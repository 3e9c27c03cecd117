import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { UNAUTHENTICATED_MESSAGE } from '@interns/contracts';
import { LocalOidcIssuer } from '@interns/identity';
import { call, createTestDatabase, freePort, ServiceProcess, startServiceProcess, TestDatabase, testNatsPrefix } from '@interns/testing';

/** The built entry point, as `npm start` runs it (`npm run build` first; `npm test` does). */
const MAIN = resolve('dist/apps/gateway/src/main.js');

describe('gateway process (dist/apps/gateway/src/main.js)', () => {
  let db: TestDatabase;
  let dataDir: string;
  let gateway: ServiceProcess | undefined;

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" first`);
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'gateway-process-spec-'));
  });

  afterAll(async () => {
    gateway?.kill();
    await gateway?.exited;
    await db?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('migrates, serves, logs requests with their correlation id (probes at debug only), and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    gateway = await startServiceProcess({
      entry: MAIN,
      port,
      env: { DATABASE_URL: db.url, NATS_PREFIX: testNatsPrefix(), GATEWAY_PORT: String(port), DATA_DIR: dataDir },
    });

    const answer = await call(port, '/api/v1/interns');
    expect(answer.status).toBe(401);
    expect(answer.json).toStrictEqual({ error: { code: 401, message: UNAUTHENTICATED_MESSAGE } });
    const correlationId = answer.headers['x-correlation-id'];
    expect(typeof correlationId).toBe('string');
    expect((await call(port, '/health/live')).status).toBe(200);

    expect(await gateway.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    const lines = gateway.stdoutLines().map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'info', correlation_id: correlationId, route: '/api/v1/interns', status: 401, msg: expect.stringMatching(/^GET \/api\/v1\/interns 401 /) }),
    );
    // At the default level: the readiness polls of the start and the liveness probe above write nothing.
    expect(lines.filter((line) => String(line.route).startsWith('/health/'))).toEqual([]);
    expect(lines).toContainEqual(expect.objectContaining({ service: 'gateway', msg: 'SIGTERM: shutting down' }));
  });

  describe('in production (NODE_ENV=production)', () => {
    it('refuses to start with OIDC_LOCAL_DEV=true, with a fatal line that says why', async () => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: db.url,
        NATS_PREFIX: testNatsPrefix(),
        GATEWAY_PORT: String(await freePort()),
        DATA_DIR: dataDir,
        NODE_ENV: 'production',
        OIDC_LOCAL_DEV: 'true',
      };
      delete env.NODE_OPTIONS;
      const run = await promisify(execFile)(process.execPath, [MAIN], { env, timeout: 30_000 }).then(
        () => ({ code: 0, stdout: '' }),
        (error: { code: number; stdout: string }) => error,
      );
      expect(run.code).toBe(1);
      const fatal = run.stdout.split('\n').filter((line) => line.includes('"fatal"'));
      expect(fatal).toHaveLength(1);
      expect(fatal[0]).toContain('OIDC_LOCAL_DEV=true is refused with NODE_ENV=production');
    });

    it('answers 401 to a token of the local development issuer without OIDC_LOCAL_DEV', async () => {
      const port = await freePort();
      const production = await startServiceProcess({
        entry: MAIN,
        port,
        env: { DATABASE_URL: db.url, NATS_PREFIX: testNatsPrefix(), GATEWAY_PORT: String(port), DATA_DIR: dataDir, NODE_ENV: 'production' },
      });
      const workspaceId = '1c1c1c1c-0000-4000-8000-00000000000a';
      try {
        // The token's member and workspace exist: the 401 is the issuer's refusal, not an unknown member.
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        await client.query(`INSERT INTO identity.organizations (id, name, programme, lifecycle_writes) VALUES ('org-a', 'A', true, true)`);
        await client.query(`INSERT INTO identity.workspaces (id, organization_id, name) VALUES ($1, 'org-a', 'main')`, [workspaceId]);
        await client.query(`INSERT INTO identity.members (id, organization_id, active) VALUES ('alice', 'org-a', true)`);
        await client.end();
        const issuer = await LocalOidcIssuer.open({ keysDir: join(dataDir, 'keys') });
        const token = await issuer.sign({
          sub: 'alice',
          org: 'org-a',
          workspace_id: workspaceId,
          scope: 'interns',
          ttlSeconds: 60,
        });
        const answer = await call(port, '/api/v1/interns', { headers: { authorization: `Bearer ${token}` } });
        expect(answer.status).toBe(401);
      } finally {
        await production.stop('SIGTERM');
      }
    });
  });
});
