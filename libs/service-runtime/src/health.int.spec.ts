import 'reflect-metadata';
import { connect, NatsConnection } from '@nats-io/transport-node';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource, QueryRunner } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, startNatsServer, NatsServerProcess, TestDatabase } from '@interns/testing';
import { HealthModule } from './health.module';
import { counter, histogram } from './metrics';
import { natsReadiness } from './nats-readiness';

@Module({})
class EmptyModule {}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((done) => setTimeout(done, 20));
  }
}

describe('HealthModule', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let broker: NatsServerProcess;
  let nc: NatsConnection;
  let current: NatsConnection | null;
  let app: NestFastifyApplication;

  let base: string;

  // Real HTTP (fastify's inject() pulls in a require()d ESM package jest cannot load).
  async function get(path: string) {
    const response = await fetch(`${base}${path}`);
    const body = await response.text();
    return {
      statusCode: response.status,
      headers: Object.fromEntries(response.headers),
      body,
      json: () => JSON.parse(body),
    };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    // One connection only, so a test can hold it and make `SELECT 1` wait for the pool.
    dataSource = await openDatabase({
      url: db.url,
      schema: 'health_test',
      migrations: [],
      applicationName: 'health.int.spec',
      migrate: false,
      poolSize: 1,
    });
    broker = await startNatsServer();
    nc = await connect({ servers: broker.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    natsReadiness(nc);
    current = nc;
    app = await NestFactory.create<NestFastifyApplication>(
      {
        module: EmptyModule,
        imports: [HealthModule.forRoot({ service: 'runs', dataSource, nats: () => current })],
      },
      new FastifyAdapter(),
      { logger: false },
    );
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
    await nc?.close();
    await broker?.remove();
    await dataSource?.destroy();
    await db?.drop();
  });

  it('answers live with {"status":"ok"}', async () => {
    const response = await get('/health/live');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
  });

  it('is ready when SELECT 1 and the NATS connection work', async () => {
    const response = await get('/health/ready');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      status: 'ok',
      details: { database: { status: 'up' }, nats: { status: 'up', connections: 1 } },
    });
  });

  it('serves Prometheus text with process metrics and metrics added through the helpers', async () => {
    const requests = counter({ name: 'health_spec_requests_total', help: 'spec', labelNames: ['route'] });
    expect(counter({ name: 'health_spec_requests_total', help: 'spec', labelNames: ['route'] })).toBe(requests);
    requests.inc({ route: 'x' }, 3);
    histogram({ name: 'health_spec_seconds', help: 'spec', buckets: [0.1, 1] }).observe(0.5);
    expect(() => histogram({ name: 'health_spec_requests_total', help: 'spec' })).toThrow(/another type/);

    const response = await get('/metrics');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(response.body).toContain('process_cpu_user_seconds_total');
    expect(response.body).toContain('interns_service_info{service="runs"} 1');
    expect(response.body).toContain('health_spec_requests_total{route="x"} 3');
    expect(response.body).toContain('health_spec_seconds_bucket{le="1"} 1');
  });

  it('is not ready while the pool cannot give a connection within a second', async () => {
    const holder: QueryRunner = dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.query('SELECT 1');
      const started = Date.now();
      const response = await get('/health/ready');
      expect(response.statusCode).toBe(503);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(response.json()).toMatchObject({
        status: 'error',
        error: { database: { status: 'down', message: expect.stringMatching(/timeout/) } },
        details: { nats: { status: 'up' } },
      });
    } finally {
      await holder.release();
    }
    expect((await get('/health/ready')).statusCode).toBe(200);
  });

  it('is not ready while NATS reconnects, and ready again once the broker is back', async () => {
    const readiness = natsReadiness(nc);
    await broker.stop('SIGKILL');
    await until(() => readiness.state() === 'reconnecting');
    const down = await get('/health/ready');
    expect(down.statusCode).toBe(503);
    expect(down.json()).toMatchObject({ error: { nats: { status: 'down', message: 'connection reconnecting' } } });
    expect((await get('/health/live')).statusCode).toBe(200);

    await broker.remove();
    broker = await startNatsServer({ port: broker.port });
    await until(() => readiness.state() === 'connected');
    expect((await get('/health/ready')).statusCode).toBe(200);
  });

  it('is not ready without a NATS connection or with a closed one', async () => {
    current = null;
    const missing = await get('/health/ready');
    expect(missing.statusCode).toBe(503);
    expect(missing.json()).toMatchObject({ error: { nats: { message: 'not connected' } } });

    const other = await connect({ servers: broker.url });
    current = other;
    expect((await get('/health/ready')).statusCode).toBe(200);
    await other.close();
    expect(natsReadiness(other).state()).toBe('closed');
    const closed = await get('/health/ready');
    expect(closed.statusCode).toBe(503);
    expect(closed.json()).toMatchObject({ error: { nats: { message: 'connection closed' } } });
    current = nc;
  });
});
