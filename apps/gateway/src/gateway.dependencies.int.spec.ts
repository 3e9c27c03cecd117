import 'reflect-metadata';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { loadConfig, subjectsFor } from '@interns/contracts';
import { IdentityStore } from '@interns/identity';
import { connectNats } from '@interns/messaging';
import { call, createTestDatabase, NatsServerProcess, startNatsServer, TestDatabase, testNatsPrefix } from '@interns/testing';
import { RunningGateway, startGateway } from './gateway.bootstrap';
import { bearer, identityFile, KEYS } from './testing/harness-identities.fixture';
import { LifecycleStandIn } from './testing/lifecycle.stand-in';

const internalError = {
  error: { code: 500, message: expect.any(String), metadata: { reason: 'internal_error', retryable: true } },
};

async function eventually(probe: () => Promise<boolean>, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((done) => setTimeout(done, 100));
  }
}

describe('gateway: the identity database is lost', () => {
  let db: TestDatabase;
  let dataDir: string;
  let gateway: RunningGateway;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'gateway-deps-spec-'));
    const config = loadConfig({ DATABASE_URL: db.url, NATS_PREFIX: testNatsPrefix(), GATEWAY_PORT: '0', DATA_DIR: dataDir });
    // Fatal only: the lost database is logged at error level, on purpose.
    gateway = await startGateway(config, { logLevels: ['fatal'] });
    await new IdentityStore(gateway.deps.dataSource).apply(identityFile());
  });

  afterAll(async () => {
    await gateway?.close();
    await db?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('answers 500 internal_error with Retry-After when credentials cannot be looked up, and turns unready', async () => {
    await db.drop();

    const answer = await call(gateway.port, '/api/v1/interns', { headers: bearer(KEYS.user) });
    expect(answer.status).toBe(500);
    expect(answer.json).toEqual(internalError);
    expect(answer.headers['retry-after']).toBe('1');

    // Readiness keeps terminus' own answer: operational paths are not API routes.
    const ready = await call(gateway.port, '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.json).toMatchObject({ status: 'error', error: { database: { status: 'down' } } });
    expect((await call(gateway.port, '/health/live')).status).toBe(200);
  });
});

describe('gateway: the message broker goes away and comes back', () => {
  let db: TestDatabase;
  let dataDir: string;
  let broker: NatsServerProcess;
  let gateway: RunningGateway;
  let nc: NatsConnection;
  let standIn: LifecycleStandIn;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'gateway-broker-spec-'));
    broker = await startNatsServer();
    const prefix = testNatsPrefix();
    const config = loadConfig({
      DATABASE_URL: db.url,
      NATS_URL: broker.url,
      NATS_PREFIX: prefix,
      GATEWAY_PORT: '0',
      DATA_DIR: dataDir,
    });
    gateway = await startGateway(config, { logLevels: ['fatal'] });
    await new IdentityStore(gateway.deps.dataSource).apply(identityFile());
    nc = await connectNats({ url: broker.url, name: 'gateway-broker-spec-stand-in' });
    standIn = new LifecycleStandIn(nc, subjectsFor(prefix));
    standIn.answer(() => ({ response: { data: [], has_more: false } }));
    await standIn.start();
  });

  afterAll(async () => {
    await nc?.close();
    await gateway?.close();
    await broker?.remove();
    await db?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('answers 500 internal_error at once during the outage and serves again after it', async () => {
    const list = () => call(gateway.port, '/api/v1/interns', { headers: bearer(KEYS.user) });
    expect((await list()).status).toBe(200);

    await broker.remove();
    await eventually(async () => (await call(gateway.port, '/health/ready')).status === 503);
    const started = Date.now();
    const during = await list();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(during.status).toBe(500);
    expect(during.json).toEqual(internalError);
    expect(during.headers['retry-after']).toBe('1');

    broker = await startNatsServer({ port: broker.port });
    await eventually(async () => (await list()).status === 200);
    expect((await call(gateway.port, '/health/ready')).status).toBe(200);
  });
});
