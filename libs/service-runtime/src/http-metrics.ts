import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { counter, histogram, LATENCY_BUCKETS_SECONDS } from '@interns/metrics';

/** The `route` label of requests no route matched (404s): one series, whatever the URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/** The `status` label of a response whose connection closed before a status line was sent (nginx's 499). */
export const CLOSED_BEFORE_RESPONSE = '499';

const requestsTotal = counter<'method' | 'route' | 'status'>({
  name: 'interns_http_requests_total',
  help: 'HTTP requests answered by this process, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'],
});

const requestDuration = histogram<'method' | 'route'>({
  name: 'interns_http_request_duration_seconds',
  help: 'HTTP request durations (until the response ended: whole streams for chat), by method and route pattern',
  labelNames: ['method', 'route'],
  buckets: LATENCY_BUCKETS_SECONDS,
});

/** What a request is counted under: the matched route pattern (`/api/v1/interns/:intern_id`), never the raw URL. */
export function routeLabel(request: Pick<FastifyRequest, 'is404' | 'routeOptions'>): string {
  if (request.is404) return UNMATCHED_ROUTE;
  return request.routeOptions.url ?? UNMATCHED_ROUTE;
}

/** Responses answered with bytes written on the socket itself (not through the response), with their status. */
const answeredOnSocket = new WeakMap<object, number>();

/** Counts `response` under `status` although the answer went out on its socket directly (the gateway's 413). */
export function markAnsweredOnSocket(response: object, status: number): void {
  answeredOnSocket.set(response, status);
}

/** The status a response is counted under once its connection is done with it. */
export function statusLabel(response: { headersSent: boolean; statusCode: number }): string {
  const onSocket = answeredOnSocket.get(response);
  if (onSocket !== undefined) return String(onSocket);
  return response.headersSent ? String(response.statusCode) : CLOSED_BEFORE_RESPONSE;
}

/**
 * Counts every request when its response ends (`interns_http_requests_total`,
 * `interns_http_request_duration_seconds`). It listens for the raw response's `close`, not Fastify's
 * `onResponse`, because `close` also comes for responses that never `finish`: a hijacked SSE stream the client
 * left or the server cut. Add it before any `onRequest` hook that may answer early (such hooks stop the chain).
 */
export function installHttpMetrics(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', countWhenClosed);
}

function countWhenClosed(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const startedAt = performance.now();
  const method = request.method;
  const route = routeLabel(request);
  const response = reply.raw;
  response.once('close', () => {
    requestsTotal.inc({ method, route, status: statusLabel(response) });
    requestDuration.observe({ method, route }, (performance.now() - startedAt) / 1000);
  });
  done();
}
