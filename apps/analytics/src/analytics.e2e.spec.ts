import { connect, NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { subjectsFor } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';
import { createTestDatabase, freePort, ServiceProcess, startServiceProcess, TestDatabase, testNatsPrefix } from '@interns/testing';

// Runs the built service (`npm test` builds first) as its own process, the way `npm start` and containers do.
describe('analytics service process', () => {
  const prefix = testNatsPrefix();
  let db: TestDatabase;
  let analytics: ServiceProcess;
  let nc: NatsConnection;

  beforeAll(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    analytics = await startServiceProcess({
      entry: 'dist/apps/analytics/src/main.js',
      port,
      env: { DATABASE_URL: db.url, NATS_PREFIX: prefix, ANALYTICS_PORT: String(port) },
    });
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
  });

  afterAll(async () => {
    analytics?.kill();
    await nc?.close();
    await db?.drop();
  });

  it('is live and ready', async () => {
    const live = await fetch(`${analytics.url}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${analytics.url}/health/ready`);
    expect(ready.status).toBe(200);
  });

  it('serves Prometheus metrics', async () => {
    const metrics = await fetch(`${analytics.url}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await metrics.text()).toContain('process_cpu_user_seconds_total');
  });

  it('migrated its schema', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT to_regclass('analytics.processed_events') AS t");
      expect(rows[0].t).toBe('analytics.processed_events');
    } finally {
      await client.end();
    }
  });

  it('answers ping on its prefixed subject', async () => {
    const reply = await new RpcClient(nc).request(subjectsFor(prefix).analytics.ping, {}, { timeoutMs: 2000 });
    expect(reply).toEqual({ service: 'analytics', ok: true });
  });

  it('exits 0 within 5 s of SIGTERM', async () => {
    const started = Date.now();
    const exit = await analytics.stop('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
