/**
 * Integration (real sockets, curl and Node clients): which requests the egress proxy lets through and where it
 * connects. Origins listen on 127.0.0.1 under a test CA and are reached by names mapped with the resolve
 * override (EGRESS_RESOLVE); allowPrivate is on unless a test is about the address rules.
 */
import { X509Certificate } from 'node:crypto';
import type { EgressCa } from './egress-ca';
import type { EgressProxy } from './egress-proxy';
import type { EgressPolicy } from './egress-types';
import {
  connectThrough,
  curl,
  type EgressTestbed,
  eventually,
  fixedContext,
  newProxy,
  type Origin,
  type OriginCa,
  startEgressTestbed,
  startHttpsOrigin,
  tlsThrough,
  writePem,
} from './testing/egress-fixtures';

const NO_POLICY: EgressPolicy = { allow: [], secrets: [] };
/** The names the test origins answer for (Node accepts no `*.test` wildcard: too few labels). */
const ORIGIN_NAMES = ['allowed.test', 'wild.test', 'a.wild.test', 'deep.x.wild.test', 'other.test', 'rebind.test'];

describe('EgressProxy: policy and addresses', () => {
  let originCa: OriginCa;
  let egressCa: EgressCa;
  let httpsOrigin: Origin;
  let httpOrigin: Origin;
  let scratch: { dir: string; remove: () => Promise<void> };
  let originCaFile: string;
  let bed: EgressTestbed;
  let proxies: EgressProxy[];

  beforeAll(async () => {
    bed = await startEgressTestbed(ORIGIN_NAMES);
    ({ originCa, egressCa, httpsOrigin, httpOrigin, scratch, proxies } = bed);
    originCaFile = await writePem(scratch.dir, 'origin-ca.pem', originCa.certificatePem);
  });

  afterEach(() => bed.reset());

  afterAll(() => bed?.close());


  async function started(setup: Partial<Parameters<typeof newProxy>[0]>, policy: EgressPolicy = NO_POLICY) {
    const made = newProxy({
      ca: egressCa,
      ports: [httpsOrigin.port, httpOrigin.port],
      resolve: new Map(ORIGIN_NAMES.map((name) => [name, ['127.0.0.1']])),
      upstreamCa: [originCa.certificatePem],
      ...setup,
    });
    proxies.push(made.proxy);
    const { port } = await made.proxy.listenTcp(0, fixedContext(policy).context);
    return { ...made, port };
  }

  it('refuses every host under the default (empty) policy with 403 and a plain-text reason, resolving nothing', async () => {
    const resolved: string[] = [];
    const { port, log } = await started({ resolver: async (name) => (resolved.push(name), ['127.0.0.1']) });

    const tunnel = await curl(['-x', `http://127.0.0.1:${port}`, '--cacert', originCaFile, `https://allowed.test:${httpsOrigin.port}/`]);
    const plain = await curl(['-x', `http://127.0.0.1:${port}`, '-i', `http://allowed.test:${httpOrigin.port}/x?q=1`]);

    expect(tunnel.exitCode).not.toBe(0);
    expect(tunnel.stderr).toMatch(/403/);
    expect(plain.stdout).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    expect(plain.stdout).toMatch(/content-type: text\/plain/i);
    expect(plain.stdout).toContain("egress_denied: allowed.test is not in this intern's egress policy");
    // A refused name is never looked up: the DNS query itself would carry data out.
    expect(resolved).toEqual([]);
    expect(httpsOrigin.requests).toEqual([]);
    expect(httpOrigin.requests).toEqual([]);
    expect(log).toEqual([
      expect.objectContaining({ host: 'allowed.test', port: httpsOrigin.port, method: null, path: null, decision: 'denied', status: null }),
      expect.objectContaining({ host: 'allowed.test', method: 'GET', path: '/x', decision: 'denied', status: 403 }),
    ]);
    expect(log[0].reason).toBe("egress_denied: allowed.test is not in this intern's egress policy");
  });

  it('lets exact hosts and *.domain subdomains of any depth through, never the apex of a wildcard', async () => {
    const { port } = await started({}, { allow: ['allowed.test', '*.wild.test'], secrets: [] });
    const reach = (host: string) =>
      curl(['-x', `http://127.0.0.1:${port}`, '--cacert', originCaFile, '-o', '/dev/null', '-w', '%{http_code}', `https://${host}:${httpsOrigin.port}/`]);

    expect((await reach('allowed.test')).stdout).toBe('200');
    expect((await reach('a.wild.test')).stdout).toBe('200');
    expect((await reach('deep.x.wild.test')).stdout).toBe('200');
    const apex = await reach('wild.test');
    expect(apex.exitCode).not.toBe(0);
    expect(apex.stdout).toBe('000');
    const other = await connectThrough(port, `other.test:${httpsOrigin.port}`);
    expect(other.status).toBe(403);
    expect(other.body).toBe("egress_denied: other.test is not in this intern's egress policy\n");
    expect(httpsOrigin.requests).toHaveLength(3);
  });

  it('tunnels an allowed host untouched: the client sees the origin’s own certificate, not an egress CA leaf', async () => {
    const { port, log } = await started({}, { allow: ['allowed.test'], secrets: [] });
    const tunnel = await connectThrough(port, `allowed.test:${httpsOrigin.port}`);
    expect(tunnel.status).toBe(200);
    const secure = await tlsThrough(tunnel.socket, 'allowed.test', originCa.certificatePem);
    expect(secure.getPeerX509Certificate()?.fingerprint256).toBe(new X509Certificate(httpsOrigin.certificatePem ?? '').fingerprint256);
    secure.end('GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n');
    await new Promise((resolve) => secure.on('close', resolve).resume());
    // The proxy logs a tunnel when its own side has closed too.
    await eventually(() => log.length > 0);

    expect(log).toEqual([
      expect.objectContaining({ host: 'allowed.test', method: null, path: null, status: null, decision: 'allowed', reason: null, secrets: [] }),
    ]);
    // Raw TLS bytes both ways: a handshake and one request and response.
    expect(log[0].bytes_out).toBeGreaterThan(100);
    expect(log[0].bytes_in).toBeGreaterThan(200);
  });

  it('forwards absolute-form plain HTTP to an allowed host and logs method, path (no query) and status', async () => {
    const { port, log } = await started({}, { allow: ['allowed.test'], secrets: [] });
    const result = await curl(['-x', `http://127.0.0.1:${port}`, '-w', ' %{http_code}', `http://allowed.test:${httpOrigin.port}/status/418?token=abc`]);
    expect(result.stdout).toBe('{"ok":true} 418');
    expect(httpOrigin.requests).toEqual([expect.objectContaining({ method: 'GET', url: '/status/418?token=abc' })]);
    expect(httpOrigin.requests[0].headers.host).toBe(`allowed.test:${httpOrigin.port}`);
    // Proxy-only headers never reach the origin.
    expect(httpOrigin.requests[0].headers['proxy-connection']).toBeUndefined();
    expect(log).toEqual([
      expect.objectContaining({ host: 'allowed.test', method: 'GET', path: '/status/418', status: 418, decision: 'allowed', reason: null }),
    ]);
    expect(log[0].bytes_in).toBeGreaterThan('{"ok":true}'.length);
  });

  it('refuses a port outside EGRESS_PORTS, even for an allowed host', async () => {
    const { port } = await started({ ports: [httpsOrigin.port] }, { allow: ['allowed.test'], secrets: [] });
    const reply = await connectThrough(port, `allowed.test:${httpOrigin.port}`);
    expect(reply.status).toBe(403);
    expect(reply.body).toBe(`egress_denied: port ${httpOrigin.port} is not open for egress (allowed.test)\n`);
  });

  it('refuses loopback, private, shared and metadata addresses unless allowPrivate, naming the class and never the address', async () => {
    const resolve = new Map([
      ['allowed.test', ['127.0.0.1']],
      ['lan.test', ['10.1.2.3']],
      ['cgnat.test', ['100.64.0.1']],
      ['metadata.test', ['169.254.169.254']],
      ['mapped.test', ['::ffff:127.0.0.1']],
    ]);
    const allow = [...resolve.keys()];
    const { port } = await started({ allowPrivate: false, resolve }, { allow, secrets: [] });
    const bodies: Record<string, string> = {};
    for (const host of allow) bodies[host] = (await connectThrough(port, `${host}:${httpsOrigin.port}`)).body;

    expect(bodies).toEqual({
      'allowed.test': 'egress_denied: allowed.test resolves to a loopback address\n',
      'lan.test': 'egress_denied: lan.test resolves to a private address\n',
      'cgnat.test': 'egress_denied: cgnat.test resolves to a shared address\n',
      'metadata.test': 'egress_denied: metadata.test resolves to a metadata address\n',
      'mapped.test': 'egress_denied: mapped.test resolves to a loopback address\n',
    });
    const literal = await connectThrough(port, `127.0.0.1:${httpsOrigin.port}`);
    expect(literal.body).toBe("egress_denied: 127.0.0.1 is not in this intern's egress policy\n");
    expect(httpsOrigin.requests).toEqual([]);
  });

  it("refuses the platform's own address:port even with allowPrivate, and a name with any refused address among its answers", async () => {
    const resolve = new Map([
      ['allowed.test', ['127.0.0.1']],
      ['mixed.test', ['127.0.0.2', '127.0.0.1']],
    ]);
    const { port } = await started(
      { allowPrivate: true, resolve, platformEndpoints: [{ address: '127.0.0.1', port: httpsOrigin.port }] },
      { allow: ['allowed.test', 'mixed.test'], secrets: [] },
    );
    const own = await connectThrough(port, `allowed.test:${httpsOrigin.port}`);
    expect(own.body).toBe('egress_denied: allowed.test resolves to an address of the platform itself\n');
    const mixed = await connectThrough(port, `mixed.test:${httpsOrigin.port}`);
    expect(mixed.body).toBe('egress_denied: mixed.test resolves to an address of the platform itself\n');
    // Another port of the same address is not the platform's: reachable with allowPrivate.
    const plain = await curl(['-x', `http://127.0.0.1:${port}`, `http://allowed.test:${httpOrigin.port}/`]);
    expect(plain.stdout).toBe('{"ok":true}');
    expect(httpsOrigin.requests).toEqual([]);
  });

  it('refuses a wildcard-bound platform endpoint on every local address', async () => {
    const { port } = await started(
      { allowPrivate: true, platformEndpoints: [{ address: '0.0.0.0', port: httpOrigin.port }] },
      { allow: ['allowed.test'], secrets: [] },
    );
    const reply = await curl(['-x', `http://127.0.0.1:${port}`, `http://allowed.test:${httpOrigin.port}/`]);
    expect(reply.stdout).toBe('egress_denied: allowed.test resolves to an address of the platform itself\n');
    expect(httpOrigin.requests).toEqual([]);
  });

  it('honors the resolve override (EGRESS_RESOLVE) and connects to the address it checked, never to a later DNS answer', async () => {
    // A second server on 127.0.0.2 with the same port: where a re-resolution would lead. It is the platform's
    // own endpoint, so a connection there would have been refused had it been checked.
    const elsewhere = await startHttpsOrigin(originCa, ORIGIN_NAMES, httpsOrigin.port, '127.0.0.2');
    try {
      const answers: string[][] = [['127.0.0.1'], ['127.0.0.2']];
      const asked: string[] = [];
      const { port, proxy } = await started(
        {
          resolver: async (name) => {
            asked.push(name);
            return answers[Math.min(asked.length - 1, 1)];
          },
          platformEndpoints: [{ address: '127.0.0.2', port: httpsOrigin.port }],
        },
        { allow: ['rebind.test'], secrets: [] },
      );
      const first = await curl(['-x', `http://127.0.0.1:${port}`, '--cacert', originCaFile, `https://rebind.test:${httpsOrigin.port}/first`]);
      expect(first.stdout).toBe('{"ok":true}');
      expect(asked).toEqual(['rebind.test']);
      expect(httpsOrigin.requests.map((request) => request.url)).toEqual(['/first']);
      // The next CONNECT resolves again and is checked again: the rebound answer is refused, not connected to.
      const second = await connectThrough(port, `rebind.test:${httpsOrigin.port}`);
      expect(second.body).toBe('egress_denied: rebind.test resolves to an address of the platform itself\n');
      expect(elsewhere.requests).toEqual([]);
      await proxy.closeAll();
    } finally {
      await elsewhere.close();
    }
  });

  it('answers 400 to origin-form requests to the proxy itself and to a malformed CONNECT target', async () => {
    const { port } = await started({}, { allow: ['allowed.test'], secrets: [] });
    const originForm = await curl(['-i', `http://127.0.0.1:${port}/`]);
    expect(originForm.stdout).toMatch(/^HTTP\/1\.1 400 Bad Request/);
    expect(originForm.stdout).toContain('requests to the proxy itself are refused');
    for (const target of ['allowed.test', 'allowed.test:0', 'allowed.test:99999', 'user@allowed.test:443', '[not-ipv6]:443', '::1:443']) {
      const reply = await connectThrough(port, target);
      expect({ target, status: reply.status }).toEqual({ target, status: 400 });
    }
  });

  it('parses an IPv6 literal CONNECT target in brackets, and lets no policy entry allow an address', async () => {
    // A stored policy never names an address (the route refuses IP literals): egress is decided on names.
    const { port } = await started({ allowPrivate: true }, { allow: ['::1', 'allowed.test'], secrets: [] });
    const reply = await connectThrough(port, `[::1]:${httpsOrigin.port}`);
    expect({ status: reply.status, body: reply.body }).toEqual({ status: 403, body: "egress_denied: ::1 is not in this intern's egress policy\n" });
  });
});
