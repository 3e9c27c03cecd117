import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
// The very head the gateway writes on a chat stream.
import { SSE_HEADERS } from '../../apps/gateway/src/chat/sse-relay';
import { runAsProcess } from '../shared/bench-kit';

/**
 * The baseline of the streams benchmark, run as its own process: plain `node:http`, no framework, no NATS. It
 * answers `POST /sse` (after reading the body, as the gateway does) with the headers of a chat stream and the
 * two events a chat client gets first (the role chunk and one content chunk), then holds the response open,
 * writing nothing more, until the client leaves. It serves `/health/live`, `/health/ready` and `/metrics` (the
 * gateway's prom-client default process metrics, event-loop delay included) so both are measured the same way.
 */


/** What the gateway writes first on a chat stream: `id:` and `data:` of the role chunk, then of the first content. */
function openingEvents(streamId: string): string {
  const identity = { id: `chatcmpl-${streamId}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: 'local/scripted' };
  const role = { ...identity, choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] };
  const content = { ...identity, choices: [{ index: 0, delta: { content: 'open' }, finish_reason: null }] };
  return `id: 1\ndata: ${JSON.stringify(role)}\n\nid: 2\ndata: ${JSON.stringify(content)}\n\n`;
}

export function startBareSseServer(port: number): Promise<() => Promise<void>> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const open = new Set<ServerResponse>();
  new Gauge({
    name: 'bare_sse_streams_active',
    help: 'SSE responses held open',
    registers: [registry],
    collect() {
      this.set(open.size);
    },
  });

  const hold = (request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      const streamId = randomUUID();
      response.writeHead(200, { 'x-correlation-id': randomUUID(), 'x-run-id': randomUUID(), ...SSE_HEADERS });
      response.flushHeaders();
      response.write(openingEvents(streamId));
      open.add(response);
      response.on('close', () => open.delete(response));
    });
  };

  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    if (request.method === 'POST' && path === '/sse') return hold(request, response);
    if (request.method === 'GET' && (path === '/health/live' || path === '/health/ready')) {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (request.method === 'GET' && path === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => response.writeHead(500).end(),
      );
      return;
    }
    response.writeHead(404).end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () =>
      resolve(
        () =>
          new Promise((closed) => {
            for (const response of open) response.destroy();
            server.close(() => closed());
          }),
      ),
    );
  });
}

runAsProcess('bare SSE server', async () => {
  const port = Number(process.env.BARE_PORT);
  if (!Number.isInteger(port) || port < 1) throw new Error('BARE_PORT is required');
  return { close: await startBareSseServer(port) };
});
