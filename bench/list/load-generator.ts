import type { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { percentile } from '../shared/bench-kit';

/** One entry of autocannon's `requests`: `setupRequest` may change the request before each send. */
interface AutocannonRequest {
  method?: string;
  setupRequest?: (request: Record<string, unknown>) => Record<string, unknown>;
}

/** The part of autocannon 9's API the benchmarks use (the package ships no types). */
interface AutocannonOptions {
  url: string;
  headers?: Record<string, string>;
  requests?: AutocannonRequest[];
  connections: number;
  /** Seconds. */
  duration: number;
  overallRate?: number;
  /** Seconds per request before it counts as a timeout. */
  timeout?: number;
}

interface AutocannonResult {
  /** Seconds. */
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  statusCodeStats: Record<string, { count: number }>;
}

interface AutocannonInstance extends EventEmitter {
  stop(): void;
}

type Autocannon = (
  options: AutocannonOptions,
  done: (error: Error | null, result: AutocannonResult) => void,
) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

export interface LoadOptions {
  url: string;
  headers?: Record<string, string>;
  /** Omitted: GET. */
  method?: 'GET' | 'POST';
  /** Called for every request sent (e.g. a body with a unique name); set the content-type in `headers`. */
  body?: () => string;
  connections: number;
  durationSeconds: number;
  /** Requests per second over all connections; omitted: closed loop (each connection sends as soon as answered). */
  overallRate?: number;
}

export interface LoadResult {
  /** Median and 99th percentile latency of 2xx answers, in ms (sub-millisecond resolution). */
  p50Ms: number;
  p99Ms: number;
  /** 2xx answers per second. */
  okPerSecond: number;
  /** 2xx answers in all. */
  ok: number;
  non2xx: number;
  /** Connection errors, including timeouts. */
  errors: number;
  statusCounts: Record<string, number>;
}

/**
 * At a fixed rate a slow answer delays the requests queued behind it on its connection; like HdrHistogram's
 * recordValueWithExpectedInterval (what autocannon does), add the latencies those requests would have seen.
 */
function correctCoordinatedOmission(latencies: number[], expectedIntervalMs: number): number[] {
  const corrected = [...latencies];
  for (const latency of latencies) {
    for (let missing = latency - expectedIntervalMs; missing >= expectedIntervalMs; missing -= expectedIntervalMs) {
      corrected.push(missing);
    }
  }
  return corrected;
}

/** Without a method or body: autocannon's default, the same GET every time. */
function requestsOf(options: LoadOptions): AutocannonRequest[] | undefined {
  const { method, body } = options;
  if (method === undefined && body === undefined) return undefined;
  const request: AutocannonRequest = { method: method ?? 'POST' };
  // Left out when there is no body: autocannon calls whatever `setupRequest` the request has.
  if (body !== undefined) request.setupRequest = (sent) => ({ ...sent, body: body() });
  return [request];
}

/** One autocannon run; `signal` stops it early (the partial result is still returned). */
export function runLoad(options: LoadOptions, signal?: AbortSignal): Promise<LoadResult> {
  // Autocannon's own histogram keeps whole milliseconds, too coarse for a baseline that answers in about one,
  // so latencies are collected from its response events.
  const latencies: number[] = [];
  return new Promise((done, fail) => {
    const instance = autocannon(
      {
        url: options.url,
        headers: options.headers,
        requests: requestsOf(options),
        connections: options.connections,
        duration: options.durationSeconds,
        overallRate: options.overallRate,
        timeout: 10,
      },
      (error, result) => {
        signal?.removeEventListener('abort', stop);
        if (error) {
          fail(error);
          return;
        }
        const sample =
          options.overallRate === undefined
            ? latencies
            : correctCoordinatedOmission(latencies, (1000 * options.connections) / options.overallRate);
        const statusCounts: Record<string, number> = {};
        for (const [status, { count }] of Object.entries(result.statusCodeStats)) statusCounts[status] = count;
        done({
          p50Ms: percentile(sample, 50),
          p99Ms: percentile(sample, 99),
          okPerSecond: result.duration > 0 ? result['2xx'] / result.duration : 0,
          ok: result['2xx'],
          non2xx: result.non2xx,
          errors: result.errors,
          statusCounts,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTimeMs);
    });
    const stop = () => instance.stop();
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });
  });
}
