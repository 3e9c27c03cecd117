import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { runAsProcess } from './bench-kit';

/**
 * The shell of a bare SSE baseline process (plain `node:http`, no framework, no NATS, no database): the responses it
 * holds open, counted by a gauge; `/health/live`, `/health/ready` and `/metrics` (prom-client's default process
 * metrics, event-loop delay included, as the gateway's) so a baseline is started and read the way a service is; 404
 * for anything its own `route` does not answer. Resolves to a `close` that ends every held response.
 */
export interface BareSseRoutes {
  /** Answers the request and returns true, or returns false for the shell to answer. `open` holds the held responses. */
  route(request: IncomingMessage, response: ServerResponse, open: Set<ServerResponse>): boolean;
  /** Name and help of the gauge of held responses. */
  gauge: { name: string; help: string };
}

export function startBareSseServer(port: number, routes: BareSseRoutes): Promise<() => Promise<void>> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const open = new Set<ServerResponse>();
  new Gauge({
    ...routes.gauge,
    registers: [registry],
    collect() {
      this.set(open.size);
    },
  });

  const server = createServer((request, response) => {
    if (routes.route(request, response, open)) return;
    const path = request.url ?? '/';
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

/** Runs a bare server as its own process on BARE_PORT (the benchmark starts it as it starts a service). */
export function runBareSseProcess(name: string, start: (port: number) => Promise<() => Promise<void>>): void {
  runAsProcess(name, async () => {
    const port = Number(process.env.BARE_PORT);
    if (!Number.isInteger(port) || port < 1) throw new Error('BARE_PORT is required');
    return { close: await start(port) };
  });
}
