import { connect } from '@nats-io/transport-node';
import Fastify from 'fastify';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';
import { parseLimit } from './list-page';

/**
 * The HTTP half of the list benchmark's floor: a bare Fastify server (no authentication, no Nest) that
 * forwards `GET /interns` with a raw nats.js request to `floor-responder.ts` and writes the reply's bytes
 * through unparsed.
 */
async function startFloorGateway(): Promise<{ close(): Promise<void> }> {
  const subject = requiredEnv('FLOOR_SUBJECT');
  const nc = await connect({ servers: requiredEnv('NATS_URL'), noAsyncTraces: true });
  const app = Fastify({ logger: false });
  app.get('/health/ready', async () => ({ status: 'ok' }));
  app.get('/interns', async (request, reply) => {
    const limit = parseLimit((request.query as Record<string, unknown>).limit);
    if (limit === null) return reply.code(400).send({ error: { code: 400, message: 'bad limit' } });
    const answer = await nc.request(subject, String(limit), { timeout: 10_000 });
    return reply.type('application/json').send(Buffer.from(answer.data.buffer, answer.data.byteOffset, answer.data.byteLength));
  });
  await app.listen({ host: '127.0.0.1', port: Number(requiredEnv('BARE_PORT')) });
  return {
    async close() {
      await app.close();
      await nc.drain();
    },
  };
}

runAsProcess('floor gateway', startFloorGateway);
