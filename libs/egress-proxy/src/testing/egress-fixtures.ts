/**
 * What the egress proxy's specs share: origins under a test CA of their own on 127.0.0.1 (HTTPS and plain HTTP)
 * that record every request they get, a proxy wired to them through resolve overrides, and clients: curl (with
 * a clean environment, so this machine's SSL_CERT_FILE and proxy variables play no part) and raw Node sockets.
 */
import 'reflect-metadata'; // @peculiar/x509 needs a Reflect polyfill
import { execFile } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import * as x509 from '@peculiar/x509';
import { AddressPolicy, type PlatformEndpoint, resolverWith, type HostResolver } from '../address-policy';
import { EgressCa, newEgressCaPem } from '../egress-ca';
import { EgressProxy } from '../egress-proxy';
import type { EgressContext, EgressLogEntry, EgressPolicy, EgressProxyOptions } from '../egress-types';

x509.cryptoProvider.set(webcrypto);

const SIGNING: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const HOUR_MS = 3_600_000;

/** A request as an origin received it. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Which connection of the origin it came on (1, 2, ... in the order they were accepted). */
  connection: number;
}

export interface Origin {
  port: number;
  requests: RecordedRequest[];
  /** The certificate the origin presents (HTTPS only), to tell it from a leaf of the egress CA. */
  certificatePem: string | null;
  close(): Promise<void>;
}

export interface OriginCa {
  certificatePem: string;
  /** A certificate and key for `names` (DNS SANs), signed by this CA. */
  issue(names: string[]): Promise<{ cert: string; key: string }>;
}

/** A CA for the tests' origins: what real public CAs are to the proxy's upstream leg. */
export async function newOriginCa(): Promise<OriginCa> {
  const keys = await webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=egress test origins CA',
    keys,
    signingAlgorithm: SIGNING,
    notBefore: new Date(now - HOUR_MS),
    notAfter: new Date(now + 24 * HOUR_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    certificatePem: certificate.toString('pem') + '\n',
    async issue(names) {
      const leafKeys = await webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
      const leaf = await x509.X509CertificateGenerator.create({
        subject: `CN=${names[0]}`,
        issuer: certificate.subject,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        signingAlgorithm: SIGNING,
        notBefore: new Date(now - HOUR_MS),
        notAfter: new Date(now + 24 * HOUR_MS),
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'dns' as const, value }))),
          await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey),
        ],
      });
      const key = x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey), x509.PemConverter.PrivateKeyTag);
      return { cert: leaf.toString('pem') + '\n', key: key + '\n' };
    },
  };
}

/**
 * An origin that records each request and answers JSON `{"ok":true}`; `/bytes/<n>` answers n bytes,
 * `/status/<code>` that status.
 */
/** Numbers an origin's connections in the order they are accepted (`event`: `secureConnection` for HTTPS). */
function numberConnections(server: net.Server, event: 'connection' | 'secureConnection'): WeakMap<object, number> {
  const numbers = new WeakMap<object, number>();
  let accepted = 0;
  server.on(event, (socket: object) => numbers.set(socket, (accepted += 1)));
  return numbers;
}

function originHandler(requests: RecordedRequest[], connectionNumbers: () => WeakMap<object, number>) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        connection: connectionNumbers().get(req.socket) ?? 0,
      });
      const path = (req.url ?? '').replace(/\?.*$/, '');
      const bytes = /^\/bytes\/(\d+)$/.exec(path);
      const status = /^\/status\/(\d+)$/.exec(path);
      if (bytes !== null) {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': bytes[1] });
        res.end(Buffer.alloc(Number(bytes[1]), 'x'));
      } else {
        res.writeHead(status === null ? 200 : Number(status[1]), { 'Content-Type': 'application/json' });
        res.end('{"ok":true}');
      }
    });
  };
}

async function listening(server: net.Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

function closer(server: http.Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/** An HTTPS origin on `host` (127.0.0.1) for `names`, under `ca`. */
export async function startHttpsOrigin(ca: OriginCa, names: string[], port = 0, host = '127.0.0.1'): Promise<Origin> {
  const requests: RecordedRequest[] = [];
  const { cert, key } = await ca.issue(names);
  let numbers = new WeakMap<object, number>();
  const server = https.createServer({ cert, key }, originHandler(requests, () => numbers));
  numbers = numberConnections(server, 'secureConnection');
  return { port: await listening(server, port, host), requests, certificatePem: cert, close: closer(server) };
}

/** A plain HTTP origin on `host` (127.0.0.1). */
export async function startHttpOrigin(port = 0, host = '127.0.0.1'): Promise<Origin> {
  const requests: RecordedRequest[] = [];
  let numbers = new WeakMap<object, number>();
  const server = http.createServer(originHandler(requests, () => numbers));
  numbers = numberConnections(server, 'connection');
  return { port: await listening(server, port, host), requests, certificatePem: null, close: closer(server) };
}

/** A context with a fixed policy; `opened` lists the secrets whose values the proxy asked for. */
export function fixedContext(policy: EgressPolicy, values: Record<string, string> = {}, ids: { internId?: string; runId?: string | null } = {}) {
  const opened: string[] = [];
  const context: EgressContext = {
    internId: ids.internId ?? 'intern-1',
    runId: ids.runId === undefined ? 'run-1' : ids.runId,
    policy: async () => policy,
    openSecret: async (name) => {
      opened.push(name);
      const value = values[name];
      if (value === undefined) throw new Error(`no value for ${name}`);
      return value;
    },
  };
  return { context, opened };
}

export interface ProxySetup {
  ca: EgressCa;
  allowPrivate?: boolean;
  platformEndpoints?: PlatformEndpoint[];
  ports: number[];
  /** Name -> addresses (EGRESS_RESOLVE), or a resolver of the test's own. */
  resolve?: Map<string, string[]>;
  resolver?: HostResolver;
  upstreamCa?: string[];
  bytesPerRun?: number;
  connectionsPerIntern?: number;
  idleTimeoutMs?: number;
}

/** A proxy and the log entries it reported. */
export function newProxy(setup: ProxySetup, extra: Partial<EgressProxyOptions> = {}): { proxy: EgressProxy; log: EgressLogEntry[] } {
  const log: EgressLogEntry[] = [];
  const proxy = new EgressProxy({
    ca: setup.ca,
    ports: setup.ports,
    addressPolicy: new AddressPolicy({
      allowPrivate: setup.allowPrivate ?? true,
      platformEndpoints: setup.platformEndpoints ?? [],
    }),
    resolver: setup.resolver ?? resolverWith(setup.resolve ?? new Map(), async (name) => {
      throw Object.assign(new Error(`${name} is not mapped in this test`), { code: 'ENOTFOUND' });
    }),
    bytesPerRun: setup.bytesPerRun ?? 1024 ** 3,
    connectionsPerIntern: setup.connectionsPerIntern ?? 64,
    upstreamCa: setup.upstreamCa,
    idleTimeoutMs: setup.idleTimeoutMs,
    connectTimeoutMs: 3000,
    onLog: (entry) => log.push(entry),
    ...extra,
  });
  return { proxy, log };
}

/** A fresh egress CA (in memory). */
export async function newEgressCa(): Promise<EgressCa> {
  return EgressCa.fromPem(await newEgressCaPem('egress CA under test'));
}

export interface CurlResult {
  exitCode: number;
  /** Response body (and, with `-i`, head). */
  stdout: string;
  stderr: string;
}

/** A directory for files a spec writes (CA files for curl); removed by the returned function. */
export async function scratchDirectory(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'egress-proxy-spec-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export async function writePem(dir: string, name: string, pem: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, pem);
  return path;
}

/** Runs curl with only PATH in its environment: no proxy variables or CA overrides of this machine leak in. */
export function curl(args: string[]): Promise<CurlResult> {
  return new Promise((resolve) => {
    execFile('curl', ['--silent', '--show-error', '--max-time', '15', ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, (error, stdout, stderr) => {
      resolve({ exitCode: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

/** What a CONNECT got: the proxy's status line and body when refused, or the open tunnel when 200. */
export interface ConnectReply {
  status: number;
  body: string;
  socket: net.Socket;
}

/**
 * Sends `CONNECT <authority>` on a new connection (TCP port, or unix socket path) and reads the reply head
 * (and, when it is not 200, the body up to the close).
 */
export function connectThrough(proxy: number | string, authority: string): Promise<ConnectReply> {
  return new Promise((resolve, reject) => {
    const socket = typeof proxy === 'number' ? net.connect(proxy, '127.0.0.1') : net.connect(proxy);
    let received = Buffer.alloc(0);
    socket.once('error', reject);
    socket.on('connect', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received.toString())?.[1] ?? 0);
      if (status === 200) {
        socket.off('data', onData);
        socket.off('error', reject);
        const rest = received.subarray(headEnd + 4);
        if (rest.length > 0) socket.unshift(rest);
        resolve({ status, body: '', socket });
      }
    };
    socket.on('data', onData);
    socket.on('end', () => {
      const text = received.toString();
      const headEnd = text.indexOf('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: headEnd === -1 ? '' : text.slice(headEnd + 4), socket });
    });
  });
}

/** TLS over an open tunnel, trusting `ca`, asking for `servername`. */
export function tlsThrough(socket: net.Socket, servername: string, ca: string): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ socket, servername, ca, ALPNProtocols: ['h2', 'http/1.1'] }, () => resolve(secure));
    secure.once('error', reject);
  });
}

/** Writes a raw HTTP/1.1 request on `stream` and reads until the server closes it (send `Connection: close`). */
export function rawExchange(stream: net.Socket | tls.TLSSocket, request: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
    stream.on('close', () => resolve(text));
    stream.on('error', () => undefined);
    stream.write(request);
  });
}

/** Waits until `condition` holds (polling), failing after `ms`. */
export async function eventually(condition: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * What the proxy's integration specs share: an origin CA with an HTTPS and a plain HTTP origin on 127.0.0.1, an
 * egress CA, a scratch directory, and the proxies a test started (closed, and the origins' requests forgotten, by
 * `reset` after each test).
 */
export interface EgressTestbed {
  originCa: OriginCa;
  egressCa: EgressCa;
  httpsOrigin: Origin;
  httpOrigin: Origin;
  scratch: { dir: string; remove: () => Promise<void> };
  proxies: EgressProxy[];
  reset(): Promise<void>;
  close(): Promise<void>;
}

export async function startEgressTestbed(originNames: string[]): Promise<EgressTestbed> {
  const originCa = await newOriginCa();
  const egressCa = await newEgressCa();
  const httpsOrigin = await startHttpsOrigin(originCa, originNames);
  const httpOrigin = await startHttpOrigin();
  const scratch = await scratchDirectory();
  const proxies: EgressProxy[] = [];
  return {
    originCa,
    egressCa,
    httpsOrigin,
    httpOrigin,
    scratch,
    proxies,
    async reset() {
      await Promise.all(proxies.splice(0).map((proxy) => proxy.closeAll()));
      httpsOrigin.requests.length = 0;
      httpOrigin.requests.length = 0;
    },
    async close() {
      await httpsOrigin.close();
      await httpOrigin.close();
      await scratch.remove();
    },
  };
}
