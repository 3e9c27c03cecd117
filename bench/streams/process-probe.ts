import { readFile } from 'node:fs/promises';
import { type MessageEvent, WebSocket } from 'undici';
import { median, sleep } from '../shared/bench-kit';

/**
 * What the streams benchmark reads of a process from outside: its resident memory (`/proc/<pid>/status`), its
 * Prometheus metrics (prom-client's default process metrics: event-loop delay, heap, handles), and a full
 * garbage collection asked through the inspector (the process runs with `--inspect=127.0.0.1:0`).
 */

/** VmRSS of `pid` in KiB. */
export async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (match === null) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]);
}

/** The median of `samples` RSS readings `gapMs` apart (a single reading catches allocation spikes). */
export async function medianRssKiB(pid: number, samples = 5, gapMs = 200): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < samples; i += 1) {
    if (i > 0) await sleep(gapMs);
    readings.push(await rssKiB(pid));
  }
  return median(readings);
}

/** One scrape of `<url>/metrics`: unlabelled samples by name (labelled ones are summed under their name). */
export async function scrapeMetrics(baseUrl: string): Promise<Map<string, number>> {
  const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (response.status !== 200) throw new Error(`${baseUrl}/metrics answered ${response.status}`);
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (match === null) continue;
    const [, name, , value] = match as unknown as [string, string, string | undefined, string];
    samples.set(name, (samples.get(name) ?? 0) + Number(value));
  }
  return samples;
}

export function metric(samples: Map<string, number>, name: string): number {
  const value = samples.get(name);
  if (value === undefined) throw new Error(`the metrics have no ${name}`);
  return value;
}

/** prom-client samples the loop with a 10 ms timer; its figures include that interval. */
export const EVENT_LOOP_MONITOR_RESOLUTION_MS = 10;

export interface LoopDelay {
  /** Delay beyond the monitor's own 10 ms interval, ms. */
  p50: number;
  p99: number;
  max: number;
}

/**
 * The event-loop delay of a process over a window: prom-client's default metrics keep a `monitorEventLoopDelay`
 * histogram that every scrape reads and resets, so a scrape opens the window and the next one reads it.
 */
export class LoopDelayWindow {
  private constructor(private readonly baseUrl: string) {}

  static async open(baseUrl: string): Promise<LoopDelayWindow> {
    await scrapeMetrics(baseUrl);
    return new LoopDelayWindow(baseUrl);
  }

  async close(): Promise<{ delay: LoopDelay; samples: Map<string, number> }> {
    const samples = await scrapeMetrics(this.baseUrl);
    const beyond = (name: string) => Math.max(0, metric(samples, name) * 1000 - EVENT_LOOP_MONITOR_RESOLUTION_MS);
    return {
      delay: {
        p50: beyond('nodejs_eventloop_lag_p50_seconds'),
        p99: beyond('nodejs_eventloop_lag_p99_seconds'),
        max: beyond('nodejs_eventloop_lag_max_seconds'),
      },
      samples,
    };
  }
}

/** The node flag that lets `InspectorGc` reach a process; port 0: each process gets a free port of its own. */
export const INSPECT_FLAG = '--inspect=127.0.0.1:0';

/**
 * A full garbage collection in another process, through its inspector (`HeapProfiler.collectGarbage`), so an
 * RSS reading counts what is live, not garbage the process had no reason to collect yet. `of` reads the
 * inspector's address from the process' output (`Debugger listening on ws://...`); null when it has none.
 */
export class InspectorGc {
  private constructor(private readonly url: string) {}

  static of(output: string): InspectorGc | null {
    const match = /Debugger listening on (ws:\/\/\S+)/.exec(output);
    return match === null ? null : new InspectorGc(match[1] as string);
  }

  /** Two collections (the second frees what the first's finalizers released), then a short settle. */
  async collect(): Promise<void> {
    const socket = new WebSocket(this.url);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.addEventListener('open', () => resolve(), { once: true });
        socket.addEventListener('error', () => reject(new Error(`inspector ${this.url} refused the connection`)), { once: true });
      });
      for (const id of [1, 2]) await this.call(socket, id, 'HeapProfiler.collectGarbage');
    } finally {
      socket.close();
    }
    await sleep(300);
  }

  private call(socket: WebSocket, id: number, method: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method} did not answer within 30 s`)), 30_000);
      const onMessage = (event: MessageEvent) => {
        const message = JSON.parse(String(event.data)) as { id?: number; error?: { message: string } };
        if (message.id !== id) return;
        clearTimeout(timer);
        socket.removeEventListener('message', onMessage);
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve();
      };
      socket.addEventListener('message', onMessage);
      socket.send(JSON.stringify({ id, method }));
    });
  }
}

/** CPU time (user + system) `pid` has used, in seconds. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds of several processes from a start point: `stop()` gives each one's use since `start`. */
export class CpuMeter {
  private constructor(
    private readonly start: Map<string, number>,
    private readonly pids: Map<string, number>,
  ) {}

  static async start(pids: Map<string, number>): Promise<CpuMeter> {
    const start = new Map<string, number>();
    for (const [name, pid] of pids) start.set(name, await cpuSeconds(pid));
    return new CpuMeter(start, pids);
  }

  async stop(): Promise<Map<string, number>> {
    const used = new Map<string, number>();
    for (const [name, pid] of this.pids) used.set(name, (await cpuSeconds(pid)) - (this.start.get(name) as number));
    return used;
  }
}
