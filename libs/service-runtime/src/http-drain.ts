import type { FastifyInstance } from 'fastify';

/** How often a closing server looks for connections that went idle. */
const IDLE_SWEEP_INTERVAL_MS = 100;

/**
 * Lets a closing server finish its requests in flight without keep-alive connections holding it open.
 * Node's `server.close()` ends only the connections idle at that moment; one busy with a request stays open
 * after its response until the keep-alive timeout (Fastify's default: 72 s), far past any grace period.
 * So, once Fastify starts closing:
 *  - every response asks the client to close the connection (its next request opens a new one, through
 *    the load balancer, to a replica that is not going away);
 *  - connections that go idle anyway (a hijacked response, such as an event stream, skips `onSend`) are
 *    ended as soon as they do.
 * Call before the server listens.
 */
export function installHttpDrain(fastify: FastifyInstance): void {
  let closing = false;
  let sweep: NodeJS.Timeout | undefined;
  fastify.addHook('preClose', (done) => {
    closing = true;
    sweep = setInterval(() => fastify.server.closeIdleConnections(), IDLE_SWEEP_INTERVAL_MS);
    sweep.unref();
    done();
  });
  fastify.addHook('onClose', (_instance, done) => {
    clearInterval(sweep);
    done();
  });
  fastify.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
