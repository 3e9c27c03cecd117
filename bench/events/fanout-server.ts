import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
// The very head the gateway writes on an event stream (its readers use the chat relay's).
import { SSE_HEADERS } from '../../apps/gateway/src/chat/sse-relay';
import { runAsProcess } from '../shared/bench-kit';

/**
 * The baseline of the events benchmark, run as its own process: plain `node:http`, no framework, no NATS, no
 * database. `GET /events` answers the SSE head and holds the response. `POST /publish` with `{type, workspace_id,
 * data}` stamps an event (`id`, `created_at` now, as the platform's events carry), makes its frame once, in the
 * shape the gateway's feed writes (`id:`, `event:`, one `data:` line), writes that one buffer to every held
 * response, and only then answers `{id, created_at}`: the least a fan-out of one message can cost. It serves
 * `/health/live`, `/health/ready` and `/metrics` (prom-client's default process metrics, as the gateway's) so
 * both are read the same way.
 */

interface Published {
  type: string;
  workspace_id: string;
  data: Record<string, unknown>;
}

export function startFanoutServer(port: number): Promise<() => Promise<void>> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const open = new Set<ServerResponse>();
  new Gauge({
    name: 'bare_event_streams_active',
    help: 'Event streams held open',
    registers: [registry],
    collect() {
      this.set(open.size);
    },
  });

  const hold = (response: ServerResponse) => {
    response.writeHead(200, { 'x-correlation-id': randomUUID(), ...SSE_HEADERS });
    response.flushHeaders();
    open.add(response);
    response.on('close', () => open.delete(response));
  };

  const publish = (request: IncomingMessage, response: ServerResponse) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      let published: Published;
      try {
        published = JSON.parse(Buffer.concat(parts).toString('utf8')) as Published;
      } catch {
        response.writeHead(400).end();
        return;
      }
      const event = { id: randomUUID(), type: published.type, created_at: new Date().toISOString(), workspace_id: published.workspace_id, data: published.data };
      // Made once and shared by every response, as the gateway's feed does (`EventRing` holds one frame per event).
      const frame = Buffer.from(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      for (const held of open) held.write(frame);
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: event.id, created_at: event.created_at }));
    });
  };

  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    if (request.method === 'GET' && path === '/events') return hold(response);
    if (request.method === 'POST' && path === '/publish') return publish(request, response);
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

runAsProcess('bare fan-out server', async () => {
  const port = Number(process.env.BARE_PORT);
  if (!Number.isInteger(port) || port < 1) throw new Error('BARE_PORT is required');
  return { close: await startFanoutServer(port) };
});
