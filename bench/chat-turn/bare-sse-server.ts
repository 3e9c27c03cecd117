import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';

/**
 * The baseline of the chat turn benchmark: one process, plain `node:http`, no authentication, no NATS, no
 * database. It answers any `POST` with the answer the platform gave to one real `/say hi` turn, captured by
 * the benchmark: the same status and headers, and the same SSE bytes (role, content, finish and final chunks,
 * `[DONE]`), written as soon as the request body has been read (or, with a delay, the headers then and the events
 * that long after, as a model's time to its first token).
 */
export interface CapturedAnswer {
  /** Response headers as the client received them, minus those node:http writes itself (date, transfer-encoding). */
  headers: Record<string, string>;
  /** The whole event stream, base64. */
  body: string;
}

/** Headers node:http adds on its own to a chunked response; replaying them would duplicate or contradict them. */
export const NODE_MANAGED_HEADERS: ReadonlySet<string> = new Set(['date', 'transfer-encoding', 'keep-alive', 'content-length']);

export interface BareSseServer {
  url: string;
  close(): Promise<void>;
}

export async function startBareSseServer(options: { answer: CapturedAnswer; port: number; delayMs?: number }): Promise<BareSseServer> {
  const delayMs = options.delayMs ?? 0;
  const headers = Object.entries(options.answer.headers).filter(([name]) => !NODE_MANAGED_HEADERS.has(name.toLowerCase()));
  const body = Buffer.from(options.answer.body, 'base64');

  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    if (request.method === 'GET' && request.url === '/health/ready') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (request.method !== 'POST') {
      response.writeHead(405).end();
      return;
    }
    // Like the gateway, the request body is read whole before anything is answered.
    request.resume();
    request.once('end', () => {
      response.writeHead(200, Object.fromEntries(headers));
      response.flushHeaders();
      if (delayMs === 0) response.end(body);
      else setTimeout(() => response.end(body), delayMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${options.port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Run as its own process (the benchmark starts it so it never shares an event loop with the client).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAsProcess('bare SSE server', async () => {
    const answer = JSON.parse(requiredEnv('BARE_ANSWER')) as CapturedAnswer;
    return startBareSseServer({ answer, port: Number(requiredEnv('BARE_PORT')), delayMs: Number(process.env.BARE_DELAY_MS ?? 0) });
  });
}
