import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { UNAUTHENTICATED_MESSAGE } from '@interns/contracts';
import { createTestDatabase, freePort, ServiceProcess, startServiceProcess, TestDatabase, testNatsPrefix } from '@interns/testing';
import { call } from './testing/http-call';

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

  it('migrates, serves, logs requests with their correlation id at debug level, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    gateway = await startServiceProcess({
      entry: MAIN,
      port,
      env: { DATABASE_URL: db.url, NATS_PREFIX: testNatsPrefix(), GATEWAY_PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'debug' },
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
      expect.objectContaining({ level: 'debug', correlation_id: correlationId, msg: expect.stringMatching(/^GET \/api\/v1\/interns 401 /) }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ service: 'gateway', msg: 'SIGTERM: shutting down' }));
  });
});
