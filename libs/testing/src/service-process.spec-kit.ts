import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { freePort, ServiceProcess, startServiceProcess } from './service-process';
import { createTestDatabase, TestDatabase, testNatsPrefix } from './test-database';
import { deleteTestStreams } from './test-streams';

/**
 * The checks every service process passes (spec files call this inside jest): it runs the built service
 * (`npm test` builds first) as its own process, the way `npm start` and containers do.
 */
export function describeServiceProcess(options: {
  service: 'runs' | 'analytics' | 'lifecycle' | 'webhooks';
  portVariable: string;
  /** A table its migrations create, schema-qualified. */
  migratedTable: string;
  /** Asks the service's ping query over `nc` (the caller brings the RPC client: testing sits below messaging). */
  ping: (nc: NatsConnection, prefix: string) => Promise<unknown>;
}): void {
  describe(`${options.service} service process`, () => {
    const prefix = testNatsPrefix();
    let db: TestDatabase;
    let service: ServiceProcess;
    let nc: NatsConnection;
    let dataDir: string | undefined;

    beforeAll(async () => {
      db = await createTestDatabase();
      // Services keep files under DATA_DIR (workspaces, keys): never the checkout's own .data.
      dataDir = await mkdtemp(join(tmpdir(), `interns-${options.service}-`));
      const port = await freePort();
      service = await startServiceProcess({
        entry: `dist/apps/${options.service}/src/main.js`,
        port,
        env: { DATABASE_URL: db.url, NATS_PREFIX: prefix, DATA_DIR: dataDir, [options.portVariable]: String(port) },
      });
      nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    });

    afterAll(async () => {
      service?.kill();
      await nc?.close();
      await deleteTestStreams(prefix).catch(() => undefined);
      await db?.drop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    it('is live and ready', async () => {
      const live = await fetch(`${service.url}/health/live`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: 'ok' });
      expect((await fetch(`${service.url}/health/ready`)).status).toBe(200);
    });

    it('serves Prometheus metrics', async () => {
      const metrics = await fetch(`${service.url}/metrics`);
      expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(await metrics.text()).toContain('process_cpu_user_seconds_total');
    });

    it('migrated its schema', async () => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query('SELECT to_regclass($1)::text AS t', [options.migratedTable]);
        expect(rows[0].t).toBe(options.migratedTable);
      } finally {
        await client.end();
      }
    });

    it('answers ping on its prefixed subject', async () => {
      const reply = await options.ping(nc, prefix);
      expect(reply).toEqual({ service: options.service, ok: true });
    });

    it('exits 0 within 5 s of SIGTERM', async () => {
      const started = Date.now();
      const exit = await service.stop('SIGTERM');
      expect(exit).toEqual({ code: 0, signal: null });
      expect(Date.now() - started).toBeLessThan(5000);
    });
  });
}
