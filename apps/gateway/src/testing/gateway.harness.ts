import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { loadConfig, subjectsFor } from '@interns/contracts';
import { IdentityStore } from '@interns/identity';
import { connectNats } from '@interns/messaging';
import { createTestDatabase, TestDatabase, testNatsPrefix } from '@interns/testing';
import { RunningGateway, startGateway } from '../gateway.bootstrap';
import { identityFile } from './harness-identities.fixture';
import { LifecycleStandIn } from './lifecycle.stand-in';

export interface GatewayHarness {
  db: TestDatabase;
  dataDir: string;
  gateway: RunningGateway;
  nc: NatsConnection;
  standIn: LifecycleStandIn;
  stop(): Promise<void>;
}

/**
 * An in-process gateway on its own test database, DATA_DIR and NATS prefix, with the identity fixture
 * applied and a stand-in lifecycle responder on the real broker.
 */
export async function startGatewayHarness(options: {
  name: string;
  routeDeadlineMs: number;
  /** Further settings of the gateway's environment. */
  env?: Record<string, string>;
}): Promise<GatewayHarness> {
  const db = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), `${options.name}-`));
  const prefix = testNatsPrefix();
  const config = loadConfig({
    DATABASE_URL: db.url,
    NATS_PREFIX: prefix,
    GATEWAY_PORT: '0',
    DATA_DIR: dataDir,
    LIFECYCLE_ROUTE_DEADLINE_MS: String(options.routeDeadlineMs),
    OIDC_LOCAL_DEV: 'true',
    ...options.env,
  });
  const gateway = await startGateway(config, { logLevels: ['error', 'fatal'] });
  await new IdentityStore(gateway.deps.dataSource).apply(identityFile());
  const nc = await connectNats({ url: config.natsUrl, name: `${options.name}-lifecycle-stand-in` });
  const standIn = new LifecycleStandIn(nc, subjectsFor(prefix));
  await standIn.start();
  return {
    db,
    dataDir,
    gateway,
    nc,
    standIn,
    async stop() {
      await nc.drain();
      await gateway.close();
      await db.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
