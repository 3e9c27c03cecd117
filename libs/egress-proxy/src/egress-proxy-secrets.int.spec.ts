/**
 * Integration (real sockets, curl and Node clients): secret release. TLS is terminated only for hosts a secret
 * is bound to, with a leaf of the egress CA; there placeholders in header values become values on the way to
 * the origin (which the proxy's upstream leg verifies), and nowhere else. The origins run under a test CA the
 * proxy's upstream leg trusts; curl trusts only the egress CA.
 */
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
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
  rawExchange,
  startEgressTestbed,
  tlsThrough,
  writePem,
} from './testing/egress-fixtures';

const TOKEN = 'vault:api_token:3f9c2a7e51d04b86';
const TOKEN_VALUE = 's3cr3t-$&-value';
const DEPLOY_KEY = 'vault:deploy_key:8b1e0c44d2a97f35';
const ORIGIN_NAMES = ['api.test', 'deploy.test', 'plain.test'];

describe('EgressProxy: secret release', () => {
  let originCa: OriginCa;
  let egressCa: EgressCa;
  let httpsOrigin: Origin;
  let httpOrigin: Origin;
  let scratch: { dir: string; remove: () => Promise<void> };
  let egressCaFile: string;
  let bed: EgressTestbed;
  let proxies: EgressProxy[];

  const policy: EgressPolicy = {
    allow: ['plain.test'],
    secrets: [
      { name: 'api_token', hosts: ['api.test'], placeholder: TOKEN },
      { name: 'deploy_key', hosts: ['deploy.test'], placeholder: DEPLOY_KEY },
    ],
  };
  const values = { api_token: TOKEN_VALUE, deploy_key: 'deploy-key-value' };

  beforeAll(async () => {
    bed = await startEgressTestbed(ORIGIN_NAMES);
    ({ originCa, egressCa, httpsOrigin, httpOrigin, scratch, proxies } = bed);
    egressCaFile = await writePem(scratch.dir, 'egress-ca.pem', egressCa.certificatePem);
  });

  afterEach(() => bed.reset());

  afterAll(() => bed?.close());

  async function started(upstreamCa: string[] = [originCa.certificatePem]) {
    const made = newProxy({
      ca: egressCa,
      ports: [httpsOrigin.port, httpOrigin.port],
      resolve: new Map(ORIGIN_NAMES.map((name) => [name, ['127.0.0.1']])),
      upstreamCa,
    });
    proxies.push(made.proxy);
    const { context, opened } = fixedContext(policy, values);
    const { port } = await made.proxy.listenTcp(0, context);
    return { ...made, port, opened, proxyUrl: `http://127.0.0.1:${port}` };
  }

  it('terminates TLS for a bound host and puts the value in place of the placeholder in headers only', async () => {
    const { proxyUrl, log, opened } = await started();
    const result = await curl([
      '-x', proxyUrl,
      '--cacert', egressCaFile,
      '-H', `Authorization: Bearer ${TOKEN}`,
      '-H', `X-Both: ${TOKEN}|${TOKEN}`,
      '--data-binary', `token=${TOKEN}`,
      '-w', ' %{http_code} %{http_version}',
      `https://api.test:${httpsOrigin.port}/v1/items?token=${TOKEN}`,
    ]);

    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('{"ok":true} 200 1.1');
    expect(httpsOrigin.requests).toHaveLength(1);
    const received = httpsOrigin.requests[0];
    expect(received.headers.authorization).toBe(`Bearer ${TOKEN_VALUE}`);
    expect(received.headers['x-both']).toBe(`${TOKEN_VALUE}|${TOKEN_VALUE}`);
    expect(received.headers.host).toBe(`api.test:${httpsOrigin.port}`);
    // Body and query keep the placeholder: a value must not land where servers echo or store it.
    expect(received.body).toBe(`token=${TOKEN}`);
    expect(received.url).toBe(`/v1/items?token=${TOKEN}`);
    expect(received.method).toBe('POST');
    expect(opened).toEqual(['api_token']);

    expect(log).toEqual([
      expect.objectContaining({
        host: 'api.test',
        port: httpsOrigin.port,
        method: 'POST',
        path: '/v1/items',
        decision: 'allowed',
        reason: null,
        secrets: ['api_token'],
        status: 200,
      }),
    ]);
    expect(log[0].bytes_out).toBeGreaterThan(`token=${TOKEN}`.length);
    expect(log[0].bytes_in).toBeGreaterThan('{"ok":true}'.length);
    expect(JSON.stringify(log)).not.toContain(TOKEN_VALUE);
  });

  it('presents an egress CA leaf for the bound host (SAN, serverAuth, AKI) and offers only http/1.1', async () => {
    const { port } = await started();
    const tunnel = await connectThrough(port, `api.test:${httpsOrigin.port}`);
    expect(tunnel.status).toBe(200);
    const secure = await tlsThrough(tunnel.socket, 'api.test', egressCa.certificatePem);
    expect(secure.alpnProtocol).toBe('http/1.1');
    const leaf = secure.getPeerX509Certificate();
    if (leaf === undefined) throw new Error('the proxy presented no certificate');
    expect(leaf.subjectAltName).toBe('DNS:api.test');
    expect(leaf.checkIssued(new X509Certificate(egressCa.certificatePem))).toBe(true);
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    secure.destroy();
  });

  it('refuses a placeholder headed to an allowed host its secret is not bound to, and that origin sees nothing', async () => {
    const { proxyUrl, log, opened } = await started();
    // deploy.test is terminated (deploy_key is bound to it), so the proxy sees api_token's placeholder there.
    const result = await curl([
      '-x', proxyUrl, '--cacert', egressCaFile, '-i',
      '-H', `Authorization: Bearer ${TOKEN}`,
      `https://deploy.test:${httpsOrigin.port}/upload`,
    ]);
    // curl -i shows the CONNECT reply first, then the answer from inside the tunnel.
    expect(result.stdout).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 403 Forbidden\r\n/);
    expect(result.stdout).toContain('egress_denied: secret api_token is not released to deploy.test');
    // Plain HTTP to an allowed host: the proxy sees every header.
    const plain = await curl(['-x', proxyUrl, '-H', `Cookie: a=1; t=${TOKEN}`, `http://plain.test:${httpOrigin.port}/`]);
    expect(plain.stdout).toBe('egress_denied: secret api_token is not released to plain.test\n');

    expect(httpsOrigin.requests).toEqual([]);
    expect(httpOrigin.requests).toEqual([]);
    expect(opened).toEqual([]);
    expect(log).toEqual([
      expect.objectContaining({ host: 'deploy.test', method: 'GET', path: '/upload', decision: 'denied', secrets: ['api_token'], status: 403 }),
      expect.objectContaining({ host: 'plain.test', method: 'GET', path: '/', decision: 'denied', secrets: ['api_token'], status: 403 }),
    ]);
  });

  it('logs a terminated tunnel that carried no request: a client that does not trust the egress CA', async () => {
    const { proxyUrl, log, opened } = await started();
    const originCaFile = await writePem(scratch.dir, 'origin-ca.pem', originCa.certificatePem);
    const result = await curl(['-x', proxyUrl, '--cacert', originCaFile, '-H', `Authorization: ${TOKEN}`, `https://api.test:${httpsOrigin.port}/`]);
    expect(result.exitCode).toBe(60); // CURLE_PEER_FAILED_VERIFICATION: the leaf is the egress CA's
    await eventually(() => log.length === 1);
    expect(log).toEqual([
      expect.objectContaining({
        host: 'api.test',
        method: null,
        decision: 'allowed',
        reason: 'egress_error: the client did not complete TLS with the egress CA leaf',
        secrets: [],
      }),
    ]);
    expect(httpsOrigin.requests).toEqual([]);
    expect(opened).toEqual([]);
  });

  it('does not terminate or substitute for a host that is only allowed: its traffic is tunnelled as it is', async () => {
    const { proxyUrl, log } = await started();
    // plain.test is on the allow list but no secret is bound to it: CONNECT is tunnelled, so curl, trusting only the
    // egress CA, meets the origin's own certificate and refuses it.
    const result = await curl(['-x', proxyUrl, '--cacert', egressCaFile, '-H', `Authorization: ${TOKEN}`, `https://plain.test:${httpsOrigin.port}/`]);
    expect(result.exitCode).toBe(60); // CURLE_PEER_FAILED_VERIFICATION
    // A tunnel is logged when it closes, which may be just after curl gave up.
    await eventually(() => log.length > 0);
    expect(log).toEqual([expect.objectContaining({ host: 'plain.test', method: null, decision: 'allowed', secrets: [] })]);
  });

  it('never releases a value over plain HTTP, even to the bound host', async () => {
    const { proxyUrl, opened } = await started();
    const result = await curl(['-x', proxyUrl, '-H', `Authorization: ${TOKEN}`, `http://api.test:${httpOrigin.port}/`]);
    expect(result.stdout).toBe('egress_denied: secret api_token is released to api.test over HTTPS only\n');
    expect(httpOrigin.requests).toEqual([]);
    expect(opened).toEqual([]);
  });

  it('serves plain HTTP sent inside a CONNECT tunnel to a bound host (as undici does for http:// URLs), with the same checks', async () => {
    const { port, log } = await started();
    const tunnel = await connectThrough(port, `api.test:${httpOrigin.port}`);
    expect(tunnel.status).toBe(200);
    const reply = await rawExchange(tunnel.socket, `GET /inner?x=1 HTTP/1.1\r\nHost: api.test:${httpOrigin.port}\r\nConnection: close\r\n\r\n`);
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(reply).toContain('{"ok":true}');
    expect(httpOrigin.requests).toEqual([expect.objectContaining({ url: '/inner?x=1' })]);
    expect(log).toEqual([expect.objectContaining({ host: 'api.test', method: 'GET', path: '/inner', status: 200 })]);
  });

  it('pins Host and SNI to the CONNECT target', async () => {
    const { port, log } = await started();
    const tunnel = await connectThrough(port, `api.test:${httpsOrigin.port}`);
    const secure = await tlsThrough(tunnel.socket, 'api.test', egressCa.certificatePem);
    const reply = await rawExchange(secure, `GET / HTTP/1.1\r\nHost: deploy.test\r\nAuthorization: ${TOKEN}\r\nConnection: close\r\n\r\n`);
    expect(reply).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    expect(reply).toContain('egress_denied: Host deploy.test does not match the target api.test');

    const second = await connectThrough(port, `api.test:${httpsOrigin.port}`);
    // The leaf for api.test does not name deploy.test: verification is skipped here to reach the SNI check.
    const mismatched = await new Promise<string>((resolve) => {
      const socket = tls.connect({ socket: second.socket, servername: 'deploy.test', rejectUnauthorized: false });
      let text = '';
      socket.on('secureConnect', () => socket.write('GET / HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n'));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(text));
    });
    expect(mismatched).toBe('');
    expect(httpsOrigin.requests).toEqual([]);
    expect(log.map((entry) => entry.reason)).toEqual([
      'egress_denied: Host deploy.test does not match the target api.test',
      'egress_denied: TLS server name deploy.test does not match the CONNECT target api.test',
    ]);
  });

  it("answers 502 when the bound host's real certificate does not verify, and sends nothing", async () => {
    // The upstream leg trusts only Node's roots here, not the test origins' CA.
    const { proxyUrl, log, opened } = await started([]);
    const result = await curl(['-x', proxyUrl, '--cacert', egressCaFile, '-H', `Authorization: ${TOKEN}`, '-w', ' %{http_code}', `https://api.test:${httpsOrigin.port}/`]);
    expect(result.stdout).toMatch(/^egress_error: api\.test: TLS with the origin failed \([A-Z_]+\)\n 502$/);
    expect(httpsOrigin.requests).toEqual([]);
    expect(log).toEqual([expect.objectContaining({ host: 'api.test', status: 502, decision: 'allowed' })]);
    expect(JSON.stringify(log)).not.toContain(TOKEN_VALUE);
    // Values are opened only once the origin is reached and verified.
    expect(opened).toEqual([]);
  });

  it('keeps the connections alive: several requests in one tunnel go on one origin connection, each released and logged', async () => {
    const { proxyUrl, log } = await started();
    const url = `https://api.test:${httpsOrigin.port}`;
    const result = await curl(['-x', proxyUrl, '--cacert', egressCaFile, '-H', `Authorization: ${TOKEN}`, `${url}/one`, `${url}/two`, `${url}/three`]);
    expect(result.stdout).toBe('{"ok":true}{"ok":true}{"ok":true}');
    const connections = new Set(httpsOrigin.requests.map((request) => request.connection));
    expect(connections.size).toBe(1);
    expect(httpsOrigin.requests.map((request) => [request.url, request.headers.authorization])).toEqual([
      ['/one', TOKEN_VALUE],
      ['/two', TOKEN_VALUE],
      ['/three', TOKEN_VALUE],
    ]);
    expect(log.map((entry) => entry.path)).toEqual(['/one', '/two', '/three']);
  });
});
