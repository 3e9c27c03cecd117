/**
 * The per-install egress CA (interface section 19): the certificate the proxy presents for a host it terminates
 * TLS for (a host one of the intern's secrets is bound to) is minted for that host and signed by this CA, which
 * sandboxes trust through caBundle(). ECDSA P-256 throughout: WebCrypto makes such keys natively and fast.
 *
 * The template passes strict verification (OpenSSL, Python 3.13's VERIFY_X509_STRICT): the CA's basicConstraints
 * is critical and it carries keyUsage and a SubjectKeyIdentifier; a leaf carries a SAN, serverAuth, an
 * AuthorityKeyIdentifier and its own SKI (a leaf without AKI fails strict verification).
 */
import 'reflect-metadata'; // @peculiar/x509 needs a Reflect polyfill before it loads
import { randomBytes, webcrypto } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import * as x509 from '@peculiar/x509';
import { makePrivateDirectory, publishNoClobber, readFileIfExists } from '@interns/files';

x509.cryptoProvider.set(webcrypto);

/** Relative to KEYS_DIR: the CA's certificate and private key, in one file so that racing processes keep one pair. */
export const EGRESS_CA_FILE = join('egress', 'ca.pem');
/** Debian's bundle of the host's trusted roots, which the sandbox's bundle extends. */
export const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

const SIGNING: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const CA_VALIDITY_MS = 10 * 365 * DAY_MS;
/** Leaves live a week and are minted again once less than a day is left, so a cached one never expires in use. */
const LEAF_VALIDITY_MS = 7 * DAY_MS;
const LEAF_RENEW_BEFORE_MS = DAY_MS;
/** Leaves are minted only for hosts a secret is bound to; the bound keeps a long-lived process's cache finite. */
const LEAF_CACHE_HOSTS = 1000;
/** Backdated so that a client whose clock is a little behind does not see a certificate "not yet valid". */
const BACKDATE_MS = HOUR_MS;

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----\n?/g;

interface Leaf {
  context: SecureContext;
  certificatePem: string;
  renewAt: number;
}

function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f; // a positive INTEGER
  return bytes.toString('hex');
}

function pemBlocks(text: string, label: string): string[] {
  return [...text.matchAll(PEM_BLOCK)].filter((match) => match[1] === label).map((match) => match[0].trimEnd() + '\n');
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), x509.PemConverter.PrivateKeyTag) + '\n';
}

async function importPrivateKey(pem: string): Promise<webcrypto.CryptoKey> {
  return webcrypto.subtle.importKey('pkcs8', x509.PemConverter.decodeFirst(pem), SIGNING, true, ['sign']);
}

async function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
}

/** A new CA: certificate and private key PEMs. */
export async function newEgressCaPem(commonName = `Interns platform egress CA ${randomBytes(4).toString('hex')}`): Promise<string> {
  const keys = await newKeys();
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${commonName}`,
    keys,
    signingAlgorithm: SIGNING,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_VALIDITY_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return certificate.toString('pem') + '\n' + (await privateKeyPem(keys.privateKey));
}

export class EgressCa {
  private readonly leaves = new Map<string, Promise<Leaf>>();

  private constructor(
    private readonly certificate: x509.X509Certificate,
    private readonly caKey: webcrypto.CryptoKey,
    /** One key for every leaf: minting a leaf then costs one signature, not a key generation. */
    private readonly leafKeys: webcrypto.CryptoKeyPair,
    private readonly leafKeyPem: string,
  ) {}

  /**
   * The install's CA under `keysDir`, generated on first use: the directory is 0700, the file 0600 and written
   * no-clobber, so of several processes starting at once every one ends up with the first one written.
   */
  static async loadOrCreate(keysDir: string): Promise<EgressCa> {
    const path = join(keysDir, EGRESS_CA_FILE);
    let pem = await readFileIfExists(path);
    if (pem === null) {
      await makePrivateDirectory(join(keysDir, 'egress'), keysDir);
      await publishNoClobber(path, await newEgressCaPem(), 0o600);
      pem = await readFile(path, 'utf8');
    }
    return EgressCa.fromPem(pem, path);
  }

  /** The CA from PEM text holding its certificate and its private key (PKCS #8), in either order or two texts joined. */
  static async fromPem(pem: string, source = 'the egress CA PEM'): Promise<EgressCa> {
    const [certificatePem] = pemBlocks(pem, 'CERTIFICATE');
    const [keyPem] = pemBlocks(pem, 'PRIVATE KEY');
    if (certificatePem === undefined || keyPem === undefined) {
      throw new Error(`${source} must hold the CA certificate and its PKCS #8 private key (PEM)`);
    }
    const certificate = new x509.X509Certificate(certificatePem);
    const leafKeys = await newKeys();
    return new EgressCa(certificate, await importPrivateKey(keyPem), leafKeys, await privateKeyPem(leafKeys.privateKey));
  }

  /** The CA certificate (PEM), what a client must trust. */
  get certificatePem(): string {
    return this.certificate.toString('pem') + '\n';
  }

  /**
   * What the sandbox trusts: the host's bundle followed by the egress CA, so that tunnelled hosts verify as
   * they would on the host and terminated ones verify against the egress CA.
   */
  async caBundle(hostBundlePath: string = HOST_CA_BUNDLE): Promise<string> {
    const host = (await readFileIfExists(hostBundlePath)) ?? '';
    return `${host}${host === '' || host.endsWith('\n') ? '' : '\n'}${this.certificatePem}`;
  }

  /** The TLS context presenting a leaf for `host` (a normalized hostname or IP literal), minted once and cached. */
  async secureContextFor(host: string): Promise<SecureContext> {
    return (await this.leafFor(host)).context;
  }

  /** The leaf certificate (PEM) presented for `host`. */
  async leafCertificatePem(host: string): Promise<string> {
    return (await this.leafFor(host)).certificatePem;
  }

  private leafFor(host: string): Promise<Leaf> {
    const cached = this.leaves.get(host);
    if (cached !== undefined) {
      return cached.then((leaf) => (leaf.renewAt > Date.now() ? leaf : this.mint(host)));
    }
    return this.mint(host);
  }

  private mint(host: string): Promise<Leaf> {
    // The promise is cached, not the result: concurrent handshakes for a new host wait for one signature.
    const leaf = this.mintLeaf(host);
    this.leaves.delete(host);
    this.leaves.set(host, leaf);
    if (this.leaves.size > LEAF_CACHE_HOSTS) this.leaves.delete(this.leaves.keys().next().value as string);
    leaf.catch(() => this.leaves.delete(host));
    return leaf;
  }

  /** The CA's own SubjectKeyIdentifier, whichever way the CA computed it; else one derived from its public key. */
  private async authorityKeyIdentifier(): Promise<x509.AuthorityKeyIdentifierExtension> {
    const ski = this.certificate.getExtension(x509.SubjectKeyIdentifierExtension);
    if (ski !== null) return new x509.AuthorityKeyIdentifierExtension(ski.keyId);
    return x509.AuthorityKeyIdentifierExtension.create(this.certificate.publicKey);
  }

  private async mintLeaf(host: string): Promise<Leaf> {
    const now = Date.now();
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: `CN=${host}`,
      issuer: this.certificate.subject,
      publicKey: this.leafKeys.publicKey,
      signingKey: this.caKey,
      signingAlgorithm: SIGNING,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + LEAF_VALIDITY_MS),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: isIP(host) === 0 ? 'dns' : 'ip', value: host }]),
        await this.authorityKeyIdentifier(),
        await x509.SubjectKeyIdentifierExtension.create(this.leafKeys.publicKey),
      ],
    });
    const certificatePem = certificate.toString('pem') + '\n';
    return {
      certificatePem,
      context: createSecureContext({ cert: certificatePem + this.certificatePem, key: this.leafKeyPem }),
      renewAt: now + LEAF_VALIDITY_MS - LEAF_RENEW_BEFORE_MS,
    };
  }
}
