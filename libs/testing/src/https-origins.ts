/**
 * Origins for egress tests: HTTPS (under a test CA of their own) and plain HTTP servers on 127.0.0.1 that record
 * every request they get. What real public servers and CAs are to the egress proxy: the proxy's own specs and the
 * end-to-end specs through the sandbox share them.
 */
import 'reflect-metadata'; // @peculiar/x509 needs a Reflect polyfill
import { webcrypto } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as x509 from '@peculiar/x509';

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

