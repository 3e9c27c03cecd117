import { connect, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';
import { startFastifyBaseline } from '../shared/fastify-baseline';

/**
 * The baseline of the idle benchmark, run as its own process: what every service holds at the least, and
 * nothing else. One Fastify server (`/health/ready`), one pg pool of the services' size that has run a query (so
 * it holds a connection, as a service's pool does after its start), and one NATS connection with one
 * subscription (a service serves at least one subject). No Nest, no TypeORM, no metrics, no tracing: the
 * difference between a service and this process is what the service loads beyond that.
 */

/** libs/database's default pool size, which every service keeps. */
const POOL_SIZE = 10;

async function startBareService() {
  const pool = new pg.Pool({ connectionString: requiredEnv('DATABASE_URL'), max: POOL_SIZE, application_name: 'bench-idle-bare' });
  let nats: NatsConnection | null = null;
  try {
    await pool.query('SELECT 1');
    // The reconnect settings of libs/messaging's connectNats, spelled out: importing it would load Nest's
    // microservices package, which the baseline must not hold.
    nats = await connect({ servers: requiredEnv('NATS_URL'), name: 'bench-idle-bare', maxReconnectAttempts: -1, reconnectTimeWait: 500 });
    const subscription = nats.subscribe(`${requiredEnv('BARE_NATS_PREFIX')}.bench.idle.bare`);
    void (async () => {
      for await (const message of subscription) message.respond('ok');
    })();
    await nats.flush();
  } catch (error) {
    await nats?.close();
    await pool.end();
    throw error;
  }
  const connection = nats;
  const server = await startFastifyBaseline(pool, Number(requiredEnv('BARE_PORT')), () => undefined);
  return {
    async close() {
      await connection.drain();
      await server.close();
    },
  };
}

runAsProcess('bare idle service', startBareService);
