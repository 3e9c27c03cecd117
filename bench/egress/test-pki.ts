import 'reflect-metadata'; // @peculiar/x509 needs a Reflect polyfill before it loads
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * The origin's certificates for the egress benchmark: a CA of its own (what a public CA is to the proxy's upstream
 * leg) and one leaf for the origin's names. Like the egress proxy's spec fixtures, which are not built into dist/.
 */

x509.cryptoProvider.set(webcrypto);

const SIGNING: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const HOUR_MS = 3_600_000;

export interface OriginPki {
  /** The CA certificate (PEM): what clients of the origin, and the proxy's upstream leg, trust. */
  caPem: string;
  /** The origin's certificate and key (PEM) for every name it serves. */
  cert: string;
  key: string;
}

/** A fresh origin CA (valid a day) and a leaf for `names` (DNS SANs) signed by it. */
export async function newOriginPki(names: readonly string[]): Promise<OriginPki> {
  const caKeys = await webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
  const now = Date.now();
  const validity = { notBefore: new Date(now - HOUR_MS), notAfter: new Date(now + 24 * HOUR_MS) };
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=egress bench origins CA',
    keys: caKeys,
    signingAlgorithm: SIGNING,
    ...validity,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const leafKeys = await webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    subject: `CN=${names[0]}`,
    issuer: ca.subject,
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: SIGNING,
    ...validity,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'dns' as const, value }))),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const key = x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey), x509.PemConverter.PrivateKeyTag);
  return { caPem: ca.toString('pem') + '\n', cert: leaf.toString('pem') + '\n', key: key + '\n' };
}
