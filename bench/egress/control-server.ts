import { createServer, type Server } from 'node:http';

/**
 * The small plain-HTTP side door of the egress benchmark's child processes (origin, proxy): `GET /health/ready`
 * (what startServiceProcess waits for) and `GET /stats`, the process' own CPU time so far
 * (`process.cpuUsage()`, microseconds, every thread) and counters of its own. The bench reads /stats around
 * each run: two requests per run, next to thousands measured.
 */

export interface ProcessStats {
  /** User + system CPU time of the whole process so far, ms. */
  cpuMs: number;
  counters: Record<string, number>;
}

export async function startControlServer(port: number, counters: () => Record<string, number>): Promise<{ close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    if (request.url === '/health/ready') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else if (request.url === '/stats') {
      const cpu = process.cpuUsage();
      const stats: ProcessStats = { cpuMs: (cpu.user + cpu.system) / 1000, counters: counters() };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One read of a child's `/stats` (its control server at `url`). */
export async function readStats(url: string): Promise<ProcessStats> {
  const response = await fetch(`${url}/stats`, { signal: AbortSignal.timeout(5000) });
  if (response.status !== 200) throw new Error(`${url}/stats answered ${response.status}`);
  return (await response.json()) as ProcessStats;
}
