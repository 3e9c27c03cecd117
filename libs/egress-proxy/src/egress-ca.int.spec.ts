/**
 * Integration (files under a temporary KEYS_DIR, OpenSSL): the egress CA is generated once per install and kept
 * private; leaves verify under OpenSSL's strict checks as server certificates for their host.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EGRESS_CA_FILE, EgressCa, newEgressCaPem } from './egress-ca';

function openssl(args: string[]): Promise<{ exitCode: number; output: string }> {
  return new Promise((resolve) => {
    execFile('openssl', args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, (error, stdout, stderr) => {
      resolve({ exitCode: error === null ? 0 : 1, output: stdout + stderr });
    });
  });
}

describe('EgressCa', () => {
  let keysDir: string;

  beforeEach(async () => {
    keysDir = await mkdtemp(join(tmpdir(), 'egress-ca-'));
  });

  afterEach(async () => {
    await rm(keysDir, { recursive: true, force: true });
  });

  it('is generated once under KEYS_DIR (directory 0700, file 0600) and reused by every later and racing load', async () => {
    const racing = await Promise.all([1, 2, 3, 4].map(() => EgressCa.loadOrCreate(keysDir)));
    const first = racing[0].certificatePem;
    expect(racing.map((ca) => ca.certificatePem)).toEqual([first, first, first, first]);
    expect((await stat(join(keysDir, 'egress'))).mode & 0o777).toBe(0o700);
    expect((await stat(join(keysDir, EGRESS_CA_FILE))).mode & 0o777).toBe(0o600);
    expect((await EgressCa.loadOrCreate(keysDir)).certificatePem).toBe(first);

    const ca = new X509Certificate(first);
    expect(ca.ca).toBe(true);
    expect(ca.subject).toMatch(/^CN=Interns platform egress CA [0-9a-f]{8}$/);
  });

  it('loads from given PEMs, and refuses a PEM without the private key', async () => {
    const pem = await newEgressCaPem('given CA');
    const ca = await EgressCa.fromPem(pem);
    expect(new X509Certificate(ca.certificatePem).subject).toBe('CN=given CA');
    const certificateOnly = pem.slice(0, pem.indexOf('-----BEGIN PRIVATE KEY-----'));
    await expect(EgressCa.fromPem(certificateOnly, 'EGRESS_CA')).rejects.toThrow('EGRESS_CA must hold the CA certificate and its PKCS #8 private key (PEM)');
  });

  it('mints leaves that pass OpenSSL strict verification as server certificates for their host, cached per host', async () => {
    const ca = await EgressCa.fromPem(await newEgressCaPem('strict CA'));
    const leafPem = await ca.leafCertificatePem('api.example.test');
    expect(await ca.leafCertificatePem('api.example.test')).toBe(leafPem);
    expect(await ca.leafCertificatePem('other.example.test')).not.toBe(leafPem);
    const caFile = join(keysDir, 'ca.pem');
    const leafFile = join(keysDir, 'leaf.pem');
    await writeFile(caFile, ca.certificatePem);
    await writeFile(leafFile, leafPem);

    const verified = await openssl(['verify', '-x509_strict', '-purpose', 'sslserver', '-verify_hostname', 'api.example.test', '-CAfile', caFile, leafFile]);
    expect(verified.output).toContain(`${leafFile}: OK`);
    const wrongHost = await openssl(['verify', '-x509_strict', '-verify_hostname', 'other.example.test', '-CAfile', caFile, leafFile]);
    expect(wrongHost.exitCode).not.toBe(0);

    const text = (await openssl(['x509', '-in', leafFile, '-noout', '-text'])).output;
    expect(text).toContain('X509v3 Authority Key Identifier');
    expect(text).toContain('X509v3 Subject Key Identifier');
    expect(text).toContain('TLS Web Server Authentication');
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
    const leaf = new X509Certificate(leafPem);
    const validDays = (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 86_400_000;
    expect(validDays).toBeLessThanOrEqual(8);
  });

  it("gives the sandbox the host's bundle followed by the egress CA", async () => {
    const ca = await EgressCa.fromPem(await newEgressCaPem('bundle CA'));
    const hostBundle = join(keysDir, 'host-bundle.pem');
    await writeFile(hostBundle, '# host roots\n');
    expect(await ca.caBundle(hostBundle)).toBe(`# host roots\n${ca.certificatePem}`);
    expect(await ca.caBundle(join(keysDir, 'missing.pem'))).toBe(ca.certificatePem);
    expect(await readFile(hostBundle, 'utf8')).toBe('# host roots\n');
  });
});
