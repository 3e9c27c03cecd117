/**
 * Integration (a private nats-server that requires TLS): NATS_TLS_CA is what makes a process trust the broker.
 * With the CA that signed the broker's certificate, processes connect the way the services do and a request
 * gets its reply; without NATS_TLS_CA, or with an unrelated CA, the connection fails certificate verification.
 * The certificates are generated here, in memory.
 */
import 'reflect-metadata'; // @peculiar/x509 needs a Reflect polyfill
import { webcrypto } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type NatsServerProcess, startNatsServer } from '@interns/testing';
import { connectNats } from './nats-connection';
import { type NatsSecurity, natsSecurityOptions } from './nats-credentials';

const SIGNING: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const HOUR_MS = 3_600_000;
/**
 * What a connection fails with when the broker's certificate does not chain up to a CA the process trusts:
 * nats.js rejects with Node's TLS error itself, not wrapped in one of its own.
 */
const UNTRUSTED_CERTIFICATE = { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', message: expect.stringMatching(/unable to verify/) };

x509.cryptoProvider.set(webcrypto);

interface Issued {
  certificate: x509.X509Certificate;
  keys: webcrypto.CryptoKeyPair;
}

function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
}

/** Valid from an hour ago (no clock-skew surprises) for a day. */
function validity() {
  const now = Date.now();
  return { notBefore: new Date(now - HOUR_MS), notAfter: new Date(now + 24 * HOUR_MS) };
}

async function certificateAuthority(name: string): Promise<Issued> {
  const keys = await newKeys();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    signingAlgorithm: SIGNING,
    ...validity(),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certificate, keys };
}

/** The broker's certificate, signed by `ca`, for the names a client may dial: 127.0.0.1 and localhost. */
async function brokerCertificate(ca: Issued): Promise<Issued> {
  const keys = await newKeys();
  const certificate = await x509.X509CertificateGenerator.create({
    subject: 'CN=nats-tls-test broker',
    issuer: ca.certificate.subject,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: SIGNING,
    ...validity(),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'dns', value: 'localhost' },
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certificate, keys };
}

async function privateKeyPem(keys: webcrypto.CryptoKeyPair): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey), x509.PemConverter.PrivateKeyTag);
}

/**
 * What one connection attempt fails with (null if it connects). A single attempt that fails fast, unlike
 * `connectNats`, which waits for the broker forever. `connections` collects an unexpected success for teardown.
 */
async function connectionError(url: string, security: NatsSecurity, connections: NatsConnection[]): Promise<unknown> {
  try {
    connections.push(await connect({ servers: url, ...natsSecurityOptions('gateway', security), reconnect: false, timeout: 2000 }));
    return null;
  } catch (error) {
    return error;
  }
}

describe('NATS over TLS (NATS_TLS_CA)', () => {
  let dir: string;
  let broker: NatsServerProcess;
  let caPem: string;
  let unrelatedCaPem: string;
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nats-tls-'));
    const ca = await certificateAuthority('nats-tls-test CA');
    const unrelatedCa = await certificateAuthority('nats-tls-test unrelated CA');
    const server = await brokerCertificate(ca);
    caPem = join(dir, 'ca.pem');
    unrelatedCaPem = join(dir, 'unrelated-ca.pem');
    const certFile = join(dir, 'server.pem');
    const keyFile = join(dir, 'server-key.pem');
    const config = join(dir, 'nats-server.conf');
    await writeFile(caPem, ca.certificate.toString('pem'));
    await writeFile(unrelatedCaPem, unrelatedCa.certificate.toString('pem'));
    await writeFile(certFile, server.certificate.toString('pem'));
    await writeFile(keyFile, await privateKeyPem(server.keys), { mode: 0o600 });
    await writeFile(config, `tls {\n  cert_file: ${JSON.stringify(certFile)}\n  key_file: ${JSON.stringify(keyFile)}\n  timeout: 2\n}\n`);
    broker = await startNatsServer({ config });
  });

  afterAll(async () => {
    await Promise.all(connections.map((nc) => nc.close()));
    await broker?.remove();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('connects with the CA that signed the broker certificate, and a request gets its reply', async () => {
    const security: NatsSecurity = { natsCredsDir: null, natsTlsCa: caPem };
    // First a single attempt: were TLS broken, connectNats below would retry forever instead of failing.
    expect(await connectionError(broker.url, security, connections)).toBeNull();
    const responder = await connectNats({ url: broker.url, name: 'runs', security });
    const requester = await connectNats({ url: broker.url, name: 'gateway', security });
    connections.push(responder, requester);

    responder.subscribe('tls.echo', {
      callback: (_error, msg) => {
        msg.respond(msg.data);
      },
    });
    await responder.flush();
    const reply = await requester.request('tls.echo', 'over tls', { timeout: 2000 });

    expect(reply.string()).toBe('over tls');
    // nats.js refuses to go on unencrypted with a broker that requires TLS: this connection is TLS.
    expect(requester.info?.tls_required).toBe(true);
  });

  it('fails certificate verification without NATS_TLS_CA (the broker requires TLS, the system CAs do not know it)', async () => {
    const error = await connectionError(broker.url, { natsCredsDir: null, natsTlsCa: null }, connections);
    expect(error).toMatchObject(UNTRUSTED_CERTIFICATE);
  });

  it('fails certificate verification with a CA that did not sign the broker certificate', async () => {
    const error = await connectionError(broker.url, { natsCredsDir: null, natsTlsCa: unrelatedCaPem }, connections);
    expect(error).toMatchObject(UNTRUSTED_CERTIFICATE);
  });
});
