/**
 * Integration (real sockets): the egress proxy's limits and listeners. Connections per intern (open at once,
 * across all of its listeners), bytes per run (in and out together, shared by the run's listeners), and the
 * unix-socket listener the service binds into a sandbox.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EgressCa } from './egress-ca';
import type { EgressProxy } from './egress-proxy';
import type { EgressPolicy } from './egress-types';
import {
  connectThrough,
  curl,
  eventually,
  fixedContext,
  newEgressCa,
  newProxy,
  type Origin,
  rawExchange,
  startHttpOrigin,
} from './testing/egress-fixtures';

const POLICY: EgressPolicy = { allow: ['origin.test'], secrets: [] };

describe('EgressProxy: limits and listeners', () => {
  let egressCa: EgressCa;
  let origin: Origin;
  const proxies: EgressProxy[] = [];

  beforeAll(async () => {
    egressCa = await newEgressCa();
    origin = await startHttpOrigin();
  });

  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((proxy) => proxy.closeAll()));
    origin.requests.length = 0;
  });

  afterAll(async () => {
    await origin?.close();
  });

  function proxyWith(limits: { bytesPerRun?: number; connectionsPerIntern?: number; idleTimeoutMs?: number; budgetRetentionMs?: number }) {
    const { budgetRetentionMs, ...setup } = limits;
    const made = newProxy({ ca: egressCa, ports: [origin.port], resolve: new Map([['origin.test', ['127.0.0.1']]]), ...setup }, { budgetRetentionMs });
    proxies.push(made.proxy);
    return made;
  }

  it("refuses connections past the intern's limit, across its listeners, with egress_denied: limit, until one closes", async () => {
    const { proxy, log } = proxyWith({ connectionsPerIntern: 2 });
    const first = await proxy.listenTcp(0, fixedContext(POLICY, {}, { internId: 'intern-a', runId: 'run-1' }).context);
    const second = await proxy.listenTcp(0, fixedContext(POLICY, {}, { internId: 'intern-a', runId: 'run-2' }).context);
    const otherIntern = await proxy.listenTcp(0, fixedContext(POLICY, {}, { internId: 'intern-b', runId: 'run-3' }).context);

    const open1 = await connectThrough(first.port, `origin.test:${origin.port}`);
    const open2 = await connectThrough(second.port, `origin.test:${origin.port}`);
    expect([open1.status, open2.status]).toEqual([200, 200]);
    const refused = await connectThrough(first.port, `origin.test:${origin.port}`);
    expect(refused.status).toBe(403);
    expect(refused.body).toBe('egress_denied: limit\n');
    const plain = await curl(['-x', `http://127.0.0.1:${second.port}`, `http://origin.test:${origin.port}/`]);
    expect(plain.stdout).toBe('egress_denied: limit\n');
    // Another intern has a count of its own.
    expect((await connectThrough(otherIntern.port, `origin.test:${origin.port}`)).status).toBe(200);

    open1.socket.destroy();
    await eventually(() => log.some((entry) => entry.decision === 'allowed' && entry.reason === null && entry.bytes_out === 0));
    const again = await connectThrough(first.port, `origin.test:${origin.port}`);
    expect(again.status).toBe(200);
    for (const reply of [open2, again]) reply.socket.destroy();
    expect(log.filter((entry) => entry.reason === 'egress_denied: limit').map((entry) => entry.method)).toEqual([null, 'GET']);
  });

  it('cuts a run off once it has moved EGRESS_BYTES_PER_RUN, and refuses its next requests', async () => {
    const { proxy, log } = proxyWith({ bytesPerRun: 20_000 });
    const context = fixedContext(POLICY, {}, { runId: 'run-bytes' }).context;
    const { port } = await proxy.listenTcp(0, context);
    // A second listener of the same run shares the budget.
    const { port: samePort } = await proxy.listenTcp(0, context);

    const small = await curl(['-x', `http://127.0.0.1:${port}`, `http://origin.test:${origin.port}/bytes/1000`]);
    expect(small.stdout).toHaveLength(1000);
    expect(proxy.bytesUsed('run-bytes')).toBeGreaterThan(1000);

    // Through a tunnel: the proxy counts raw bytes and closes both ends past the budget.
    const tunnel = await connectThrough(samePort, `origin.test:${origin.port}`);
    const reply = await rawExchange(tunnel.socket, 'GET /bytes/50000 HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n');
    expect(reply.length).toBeLessThan(20_000);
    const cut = log.find((entry) => entry.method === null && entry.host === 'origin.test');
    expect(cut).toEqual(expect.objectContaining({ decision: 'denied', reason: 'egress_denied: limit' }));

    const after = await curl(['-x', `http://127.0.0.1:${port}`, '-w', ' %{http_code}', `http://origin.test:${origin.port}/`]);
    expect(after.stdout).toBe('egress_denied: limit\n 403');
    const refusedTunnel = await connectThrough(samePort, `origin.test:${origin.port}`);
    expect(refusedTunnel.body).toBe('egress_denied: limit\n');
    expect(origin.requests.map((request) => request.url)).toEqual(['/bytes/1000', '/bytes/50000']);
  });

  it("keeps a run's budget across its commands: a listener opened after the run's last one closed still counts it", async () => {
    const { proxy } = proxyWith({ bytesPerRun: 5_000 });
    const context = fixedContext(POLICY, {}, { runId: 'run-commands' }).context;
    const first = await proxy.listenTcp(0, context);
    const spent = await curl(['-x', `http://127.0.0.1:${first.port}`, `http://origin.test:${origin.port}/bytes/6000`]);
    expect(spent.stdout.length).toBeLessThan(6000);
    await proxy.close(first.key);

    const next = await proxy.listenTcp(0, context);
    const refused = await curl(['-x', `http://127.0.0.1:${next.port}`, '-w', ' %{http_code}', `http://origin.test:${origin.port}/`]);
    expect(refused.stdout).toBe('egress_denied: limit\n 403');
    expect(proxy.bytesUsed('run-commands')).toBeGreaterThan(5_000);
  });

  it('forgets a run budgetRetentionMs after its last listener closed', async () => {
    const { proxy } = proxyWith({ bytesPerRun: 5_000, budgetRetentionMs: 50 });
    const context = fixedContext(POLICY, {}, { runId: 'run-over' }).context;
    const only = await proxy.listenTcp(0, context);
    await curl(['-x', `http://127.0.0.1:${only.port}`, `http://origin.test:${origin.port}/bytes/100`]);
    expect(proxy.bytesUsed('run-over')).toBeGreaterThan(100);
    await proxy.close(only.key);
    await eventually(() => proxy.bytesUsed('run-over') === 0, 2_000);
  });

  it('cuts a plain HTTP response that would take the run past its budget', async () => {
    const { proxy, log } = proxyWith({ bytesPerRun: 10_000 });
    const { port } = await proxy.listenTcp(0, fixedContext(POLICY).context);
    const result = await curl(['-x', `http://127.0.0.1:${port}`, `http://origin.test:${origin.port}/bytes/40000`]);
    expect(result.exitCode).not.toBe(0);
    expect(result.stdout.length).toBeLessThan(10_000);
    expect(log).toEqual([expect.objectContaining({ method: 'GET', path: '/bytes/40000', decision: 'denied', reason: 'egress_denied: limit', status: 200 })]);
  });

  it('closes a tunnel that sits idle', async () => {
    const { proxy, log } = proxyWith({ idleTimeoutMs: 200 });
    const { port } = await proxy.listenTcp(0, fixedContext(POLICY).context);
    const tunnel = await connectThrough(port, `origin.test:${origin.port}`);
    const closedAt = await new Promise<number>((resolve) => tunnel.socket.on('close', () => resolve(Date.now())).resume());
    expect(closedAt).toBeGreaterThan(0);
    await eventually(() => log.length > 0);
    expect(log).toEqual([expect.objectContaining({ decision: 'allowed', bytes_out: 0, bytes_in: 0 })]);
  });

  it('serves a run on a unix socket (mode 0600), ends its connections and removes the socket on close', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'egress-socket-'));
    try {
      const { proxy, log } = proxyWith({});
      const socketPath = join(dir, 'run.sock');
      await proxy.listen(socketPath, fixedContext(POLICY).context);
      expect((await stat(socketPath)).mode & 0o777).toBe(0o600);

      const tunnel = await connectThrough(socketPath, `origin.test:${origin.port}`);
      expect(tunnel.status).toBe(200);
      const refused = await connectThrough(socketPath, `elsewhere.test:${origin.port}`);
      expect(refused.body).toBe("egress_denied: elsewhere.test is not in this intern's egress policy\n");

      const ended = new Promise((resolve) => tunnel.socket.on('close', resolve).resume());
      await proxy.close(socketPath);
      await ended;
      await expect(stat(socketPath)).rejects.toMatchObject({ code: 'ENOENT' });
      expect(log.map((entry) => entry.host)).toEqual(['elsewhere.test', 'origin.test']);

      // Listening again on the path works; a second listener on a served path is refused and leaves it serving.
      await proxy.listen(socketPath, fixedContext(POLICY).context);
      await expect(proxy.listen(socketPath, fixedContext(POLICY).context)).rejects.toThrow(`a listener is already serving ${socketPath}`);
      expect((await connectThrough(socketPath, `elsewhere.test:${origin.port}`)).status).toBe(403);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
