/**
 * What the egress proxy's specs share: origins under a test CA of their own on 127.0.0.1 (HTTPS and plain HTTP;
 * from @interns/testing) that record every request they get, a proxy wired to them through resolve overrides, and
 * clients: curl (with a clean environment, so this machine's SSL_CERT_FILE and proxy variables play no part) and raw
 * Node sockets.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { newOriginCa, startHttpOrigin, startHttpsOrigin, type Origin, type OriginCa } from '@interns/testing';
import { AddressPolicy, type PlatformEndpoint, resolverWith, type HostResolver } from '../address-policy';
import { EgressCa, newEgressCaPem } from '../egress-ca';
import { EgressProxy } from '../egress-proxy';
import type { EgressContext, EgressLogEntry, EgressPolicy, EgressProxyOptions } from '../egress-types';

export { newOriginCa, startHttpOrigin, startHttpsOrigin, type Origin, type OriginCa, type RecordedRequest } from '@interns/testing';

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
