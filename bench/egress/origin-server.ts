import https from 'node:https';
import { pathToFileURL } from 'node:url';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';
import { startControlServer } from './control-server';

/**
 * The egress benchmark's origin, its own process: HTTPS on 127.0.0.1 under the bench's origin CA, keep-alive,
 * answering `GET /1k` with 1024 bytes. A request carrying an Authorization header gets 200 only when it holds
 * the secret's value (ORIGIN_AUTHORIZATION), else 403: so every 200 through the proxy's terminated path proves
 * the placeholder was replaced. Counts requests and TLS connections for `/stats`.
 */

export const BODY_BYTES = 1024;

export async function startOrigin(options: { cert: string; key: string; port: number; controlPort: number; authorization: string }) {
  const body = Buffer.alloc(BODY_BYTES, 'x');
  const counters = { requests: 0, connections: 0, refused: 0 };
  const server = https.createServer({ cert: options.cert, key: options.key }, (request, response) => {
    counters.requests += 1;
    const authorization = request.headers.authorization;
    if (request.url !== '/1k' || (authorization !== undefined && authorization !== options.authorization)) {
      counters.refused += 1;
      response.writeHead(request.url === '/1k' ? 403 : 404, { 'content-length': '0' }).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BODY_BYTES) });
    response.end(body);
  });
  server.on('secureConnection', () => (counters.connections += 1));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const control = await startControlServer(options.controlPort, () => ({ ...counters }));
  return {
    async close() {
      await control.close();
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}

// Run as its own process, so its CPU is read alone and it never shares an event loop with the client or the proxy.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAsProcess('egress bench origin', () =>
    startOrigin({
      cert: requiredEnv('ORIGIN_CERT'),
      key: requiredEnv('ORIGIN_KEY'),
      port: Number(requiredEnv('ORIGIN_PORT')),
      controlPort: Number(requiredEnv('CONTROL_PORT')),
      authorization: requiredEnv('ORIGIN_AUTHORIZATION'),
    }),
  );
}
