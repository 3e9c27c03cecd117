import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { announceReadiness, summaryLine } from './readiness';

/** A stand-in service whose `/health/ready` answers 503 until `ready` is set. */
async function service(): Promise<{ port: number; ready: () => void; server: Server }> {
  let ready = false;
  const server = createServer((request, response) => {
    response.statusCode = request.url === '/health/ready' && ready ? 200 : 503;
    response.end();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { port: (server.address() as AddressInfo).port, ready: () => (ready = true), server };
}

describe('npm start readiness lines', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
  });

  it('announces each service once its readiness answers 200, the gateway only after the others, then the summary', async () => {
    const [gateway, lifecycle, runs] = [await service(), await service(), await service()];
    servers.push(gateway.server, lifecycle.server, runs.server);
    const lines: string[] = [];
    gateway.ready();
    const announced = announceReadiness({
      gateway: { service: 'gateway', port: gateway.port },
      services: [
        { service: 'lifecycle', port: lifecycle.port },
        { service: 'runs', port: runs.port },
      ],
      summary: summaryLine(gateway.port, true),
      write: (line) => lines.push(line),
      signal: new AbortController().signal,
      probeIntervalMs: 20,
      slowStartMs: 100,
    });
    await new Promise((done) => setTimeout(done, 300));
    // The gateway answers ready, the others do not yet: nothing about the gateway, one line about each of the others
    // (their probes run side by side, so in either order).
    expect([...lines].sort()).toEqual([
      `lifecycle is not ready yet (GET http://127.0.0.1:${lifecycle.port}/health/ready); see its log lines`,
      `runs is not ready yet (GET http://127.0.0.1:${runs.port}/health/ready); see its log lines`,
    ]);
    runs.ready();
    lifecycle.ready();
    await announced;
    expect(lines.slice(2, 4).sort()).toEqual([`lifecycle ready on :${lifecycle.port}`, `runs ready on :${runs.port}`]);
    expect(lines.slice(4)).toEqual([
      `gateway ready on :${gateway.port}`,
      `ready: API http://localhost:${gateway.port}/api/v1 | console http://localhost:${gateway.port}/console/ | first time? npm run admin -- quickstart`,
    ]);
  });

  it('stops probing, and writes nothing more, once the launcher stops', async () => {
    const gateway = await service();
    servers.push(gateway.server);
    const stopping = new AbortController();
    const lines: string[] = [];
    const announced = announceReadiness({
      gateway: { service: 'gateway', port: gateway.port },
      services: [],
      summary: 'ready',
      write: (line) => lines.push(line),
      signal: stopping.signal,
      probeIntervalMs: 20,
    });
    stopping.abort();
    gateway.ready();
    await announced;
    expect(lines).toEqual([]);
  });

  it('leaves the quickstart hint out in production', () => {
    expect(summaryLine(8080, false)).toBe('ready: API http://localhost:8080/api/v1 | console http://localhost:8080/console/');
  });
});
