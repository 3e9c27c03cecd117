/**
 * Integration (real sockets): a closing server finishes the requests in flight on kept-alive connections
 * and then closes without waiting out the keep-alive timeout.
 */
import { Agent, get } from 'node:http';
import Fastify, { FastifyInstance } from 'fastify';
import { installHttpDrain } from './http-drain';

/** Far beyond the test's time limit: a connection left to it would fail the test. */
const KEEP_ALIVE_TIMEOUT_MS = 120_000;

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((done) => {
    open = done;
  });
  return { open, opened };
}

let server: FastifyInstance;
let port: number;
const agent = new Agent({ keepAlive: true });
const slowGate = gate();
const streamGate = gate();
const closeBegan = gate();
let arrived = 0;

const request = (path: string) =>
  new Promise<Answer>((done, fail) => {
    get({ host: '127.0.0.1', port, path, agent }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => done({ status: response.statusCode ?? 0, connection: response.headers.connection, body }));
    }).on('error', fail);
  });

beforeAll(async () => {
  server = Fastify({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS });
  installHttpDrain(server);
  server.addHook('preClose', (done) => {
    closeBegan.open();
    done();
  });
  server.get('/fast', async () => 'fast');
  server.get('/slow', async () => {
    arrived += 1;
    await slowGate.opened;
    return 'slow';
  });
  server.get('/stream', (_request, reply) => {
    arrived += 1;
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
    reply.raw.write('data: first\n\n');
    void streamGate.opened.then(() => reply.raw.end('data: last\n\n'));
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  port = (server.server.address() as { port: number }).port;
});

afterAll(() => agent.destroy());

it('lets requests in flight finish, asks their clients to reconnect, and closes without the keep-alive wait', async () => {
  // Warm connections, kept alive by the agent, then two requests in flight on them.
  expect(await Promise.all([request('/fast'), request('/fast')])).toEqual([
    { status: 200, connection: 'keep-alive', body: 'fast' },
    { status: 200, connection: 'keep-alive', body: 'fast' },
  ]);
  const slow = request('/slow');
  const stream = request('/stream');
  while (arrived < 2) await new Promise((done) => setTimeout(done, 10));

  const began = Date.now();
  const closed = server.close();
  await closeBegan.opened;
  slowGate.open();
  streamGate.open();

  expect(await slow).toEqual({ status: 200, connection: 'close', body: 'slow' });
  expect(await stream).toMatchObject({ status: 200, body: 'data: first\n\ndata: last\n\n' });
  await closed;
  expect(Date.now() - began).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS / 4);
}, 60_000);
