/**
 * How `npm start` tells that the system is up: one line per service once its `GET /health/ready` answers 200 (its
 * PostgreSQL and NATS work, not merely its port), the gateway's last, after every service behind it (a gateway whose
 * lifecycle is not up would answer 500s), then one line with where to go next.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export const PROBE_INTERVAL_MS = 250;
/** One readiness probe gives up after this long (a service busy starting may be slow to answer). */
export const PROBE_TIMEOUT_MS = 1000;
/** A service not ready by then gets one line saying so; the launcher goes on waiting. */
export const SLOW_START_MS = 60_000;

export interface ReadinessTarget {
  service: string;
  port: number;
}

export interface AnnounceOptions {
  /** The gateway, announced last; the others in the order they become ready. */
  gateway: ReadinessTarget;
  services: ReadinessTarget[];
  /** The last line, once everything is ready. */
  summary: string;
  write: (line: string) => void;
  /** Aborted when the launcher stops: probing ends, nothing more is written. */
  signal: AbortSignal;
  probeIntervalMs?: number;
  slowStartMs?: number;
}

/** One probe of `GET http://127.0.0.1:<port>/health/ready`: true on 200. */
export async function isReady(port: number, signal: AbortSignal): Promise<boolean> {
  try {
    const answer = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]) });
    await answer.body?.cancel();
    return answer.status === 200;
  } catch {
    return false;
  }
}

/** Resolves once `target` is ready (false when `signal` aborts first); writes one line if that takes over `slowStartMs`. */
export async function waitUntilReady(
  target: ReadinessTarget,
  options: Pick<AnnounceOptions, 'write' | 'signal' | 'probeIntervalMs' | 'slowStartMs'>,
): Promise<boolean> {
  const startedAt = Date.now();
  let warned = false;
  while (!options.signal.aborted) {
    if (await isReady(target.port, options.signal)) return true;
    if (!warned && Date.now() - startedAt > (options.slowStartMs ?? SLOW_START_MS)) {
      warned = true;
      options.write(`${target.service} is not ready yet (GET http://127.0.0.1:${target.port}/health/ready); see its log lines`);
    }
    await sleep(options.probeIntervalMs ?? PROBE_INTERVAL_MS, undefined, { signal: options.signal }).catch(() => undefined);
  }
  return false;
}

/** `<service> ready on :<port>` per service as each becomes ready, the gateway's last, then the summary. */
export async function announceReadiness(options: AnnounceOptions): Promise<void> {
  const readyLine = (target: ReadinessTarget) => `${target.service} ready on :${target.port}`;
  const behindGateway = options.services.map(async (target) => {
    if (await waitUntilReady(target, options)) options.write(readyLine(target));
  });
  const [gatewayReady] = await Promise.all([waitUntilReady(options.gateway, options), ...behindGateway]);
  if (!gatewayReady || options.signal.aborted) return;
  options.write(readyLine(options.gateway));
  options.write(options.summary);
}

/** The last start-up line: the API, the console and what to run next (in development: quickstart). */
export function summaryLine(gatewayPort: number, development: boolean): string {
  const origin = `http://localhost:${gatewayPort}`;
  const next = development ? ' | first time? npm run admin -- quickstart' : '';
  return `ready: API ${origin}/api/v1 | console ${origin}/console/${next}`;
}
