import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { FastifyInstance } from 'fastify';
import type { Counter, Histogram } from 'prom-client';
import { CLOSED_BEFORE_RESPONSE, installHttpMetrics, markAnsweredOnSocket, routeLabel, statusLabel, UNMATCHED_ROUTE } from './http-metrics';
import { metricsRegistry } from './metrics';

describe('HTTP metric labels', () => {
  it('uses the route pattern, and one label for whatever matched no route', () => {
    expect(routeLabel({ is404: false, routeOptions: { url: '/api/v1/interns/:intern_id' } } as never)).toBe('/api/v1/interns/:intern_id');
    expect(routeLabel({ is404: true, routeOptions: { url: '*' } } as never)).toBe(UNMATCHED_ROUTE);
    expect(routeLabel({ is404: false, routeOptions: { url: undefined } } as never)).toBe(UNMATCHED_ROUTE);
  });

  it('uses the status sent, or 499 when the connection closed before any', () => {
    expect(statusLabel({ headersSent: true, statusCode: 201 })).toBe('201');
    expect(statusLabel({ headersSent: false, statusCode: 200 })).toBe(CLOSED_BEFORE_RESPONSE);
  });

  it('uses the status of an answer written on the socket itself, though the response sent nothing', () => {
    const response = { headersSent: false, statusCode: 200 };
    markAnsweredOnSocket(response, 413);
    expect(statusLabel(response)).toBe('413');
  });
});

describe('installHttpMetrics', () => {
  let fastify: FastifyInstance;
  let base: string;
  let port: number;

  beforeAll(async () => {
    fastify = Fastify();
    installHttpMetrics(fastify);
    // Refuses like the gateway's admission hook: answered from onRequest, after the metrics hook.
    fastify.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-refuse'] !== undefined) await reply.code(401).send({ refused: true });
    });
    fastify.get('/things/:id', async () => ({ ok: true }));
    fastify.post('/things', async (_request, reply) => reply.code(201).send({ ok: true }));
    // A hijacked event stream that only ends when the client leaves.
    fastify.get('/stream', (_request, reply) => {
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
      reply.raw.write(': open\n\n');
    });
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    port = (fastify.server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await fastify.close();
  });

  async function requestCount(method: string, route: string, status: string): Promise<number> {
    const { values } = await (metricsRegistry.getSingleMetric('interns_http_requests_total') as Counter).get();
    const found = values.find((v) => v.labels.method === method && v.labels.route === route && v.labels.status === status);
    return found?.value ?? 0;
  }

  async function durationCount(method: string, route: string): Promise<number> {
    const { values } = await (metricsRegistry.getSingleMetric('interns_http_request_duration_seconds') as Histogram).get();
    const found = values.find(
      (v) => v.metricName === 'interns_http_request_duration_seconds_count' && v.labels.method === method && v.labels.route === route,
    );
    return found?.value ?? 0;
  }

  /** The count is written on the response's `close`, a tick after the client has read the answer. */
  async function eventually(check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('the metric never got there');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('counts by method, route pattern and status, never by raw URL', async () => {
    const before = await requestCount('GET', '/things/:id', '200');
    await fetch(`${base}/things/1`).then((r) => r.text());
    await fetch(`${base}/things/2`).then((r) => r.text());
    await fetch(`${base}/things`, { method: 'POST' }).then((r) => r.text());
    await eventually(async () => (await requestCount('GET', '/things/:id', '200')) === before + 2);
    await eventually(async () => (await requestCount('POST', '/things', '201')) >= 1);
    expect(await durationCount('GET', '/things/:id')).toBeGreaterThanOrEqual(2);
    const text = await metricsRegistry.metrics();
    expect(text).not.toMatch(/route="\/things\/1"/);
  });

  it('counts unmatched URLs under one route label, and refusals answered by a later onRequest hook', async () => {
    await fetch(`${base}/nowhere/${Date.now()}`).then((r) => r.text());
    await fetch(`${base}/things/3`, { headers: { 'x-refuse': '1' } }).then((r) => r.text());
    await eventually(async () => (await requestCount('GET', UNMATCHED_ROUTE, '404')) >= 1);
    await eventually(async () => (await requestCount('GET', '/things/:id', '401')) >= 1);
  });

  it('counts a hijacked stream when the client leaves it', async () => {
    const before = await requestCount('GET', '/stream', '200');
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/stream' }, (response) => {
        response.once('data', () => {
          expect(response.statusCode).toBe(200);
          req.destroy();
          resolve();
        });
      });
      req.on('error', reject);
      req.end();
    });
    await eventually(async () => (await requestCount('GET', '/stream', '200')) === before + 1);
  });
});
