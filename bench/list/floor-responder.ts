import { createServer } from 'node:http';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';
import { callerFromEnv, listPageSource, POOL_SIZE } from './list-page';

/**
 * The service half of the list benchmark's floor: a raw nats.js queue subscriber (no Nest, no interceptors,
 * no metrics, no request context) that runs the same query and mapping as lifecycle and replies with the
 * page's JSON bytes. With `floor-gateway.ts` it is the least the gateway -> NATS -> service split can cost.
 */
async function startFloorResponder(): Promise<{ close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: requiredEnv('DATABASE_URL'), max: POOL_SIZE, application_name: 'bench-floor' });
  const source = await listPageSource(pool, callerFromEnv());
  const nc = await connect({ servers: requiredEnv('NATS_URL'), noAsyncTraces: true });
  const encoder = new TextEncoder();
  nc.subscribe(requiredEnv('FLOOR_SUBJECT'), {
    queue: 'bench-floor',
    callback: (error, message) => {
      if (error) return;
      const limit = Number(message.string());
      source.page(limit).then(
        (list) => message.respond(encoder.encode(JSON.stringify(list))),
        () => message.respond(encoder.encode('{"error":{"code":500,"message":"query failed"}}')),
      );
    },
  });
  await nc.flush();
  // Only so the benchmark can wait for it like for any other process: answered once subscribed.
  const health = createServer((_request, response) => response.end('{"status":"ok"}'));
  await new Promise<void>((listening) => health.listen(Number(requiredEnv('BARE_PORT')), '127.0.0.1', listening));
  return {
    async close() {
      health.close();
      await nc.drain();
      await pool.end();
    },
  };
}

runAsProcess('floor responder', startFloorResponder);
