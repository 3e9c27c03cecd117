import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint } from 'jose';
import {
  DAEMON_SIGNING_DIR,
  DAEMON_SIGNING_KEY_FILE,
  DAEMON_SIGNING_PREVIOUS_KEY_FILE,
  DaemonSigningKey,
  DaemonSigningKeyring,
  jwkThumbprint,
} from './signing-key';

describe('DaemonSigningKey', () => {
  let dataDir: string;
  let keysDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'daemon-signing-'));
    keysDir = join(dataDir, 'keys');
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('generates one key under KEYS_DIR (directories 0700, file 0600) that racing loaders and later starts share', async () => {
    const loaded = await Promise.all([1, 2, 3, 4].map(() => DaemonSigningKey.load({ pem: null, keysDir, legacyDataDir: dataDir })));
    const path = join(keysDir, DAEMON_SIGNING_DIR, DAEMON_SIGNING_KEY_FILE);
    expect((await stat(keysDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(keysDir, DAEMON_SIGNING_DIR))).mode & 0o777).toBe(0o700);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+-----END PRIVATE KEY-----\n$/);
    expect(new Set(loaded.map((key) => key.kid)).size).toBe(1);
    expect((await DaemonSigningKey.load({ pem: null, keysDir })).kid).toBe(loaded[0]?.kid);
    // Nothing under DATA_DIR itself.
    await expect(stat(join(dataDir, DAEMON_SIGNING_DIR))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('moves the key an earlier release generated under DATA_DIR into KEYS_DIR once: the same key (kid) signs on', async () => {
    const legacyDirectory = join(dataDir, DAEMON_SIGNING_DIR);
    const legacyPem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    await mkdir(legacyDirectory, { mode: 0o700 });
    await writeFile(join(legacyDirectory, DAEMON_SIGNING_KEY_FILE), legacyPem, { mode: 0o600 });
    const legacyKid = DaemonSigningKey.fromPem(legacyPem).kid;

    const loaded = await Promise.all([1, 2, 3, 4].map(() => DaemonSigningKey.load({ pem: null, keysDir, legacyDataDir: dataDir })));
    expect(loaded.map((key) => key.kid)).toEqual([legacyKid, legacyKid, legacyKid, legacyKid]);
    const path = join(keysDir, DAEMON_SIGNING_DIR, DAEMON_SIGNING_KEY_FILE);
    expect(await readFile(path, 'utf8')).toBe(legacyPem);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    await expect(stat(legacyDirectory)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await DaemonSigningKey.load({ pem: null, keysDir, legacyDataDir: dataDir })).kid).toBe(legacyKid);
  });

  it('uses the configured PEM (line breaks may be escaped) and never writes a file then', async () => {
    const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const configured = await DaemonSigningKey.load({ pem: pem.replace(/\n/g, '\\n'), keysDir, legacyDataDir: dataDir });
    expect(configured.kid).toBe(DaemonSigningKey.fromPem(pem).kid);
    await expect(stat(keysDir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses keys that are not Ed25519 private keys', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' });
    expect(() => DaemonSigningKey.fromPem(rsa.toString())).toThrow('the daemon signing key must be Ed25519, got rsa');
    expect(() => DaemonSigningKey.fromPem('not a key')).toThrow(/not a readable PKCS#8 PEM private key/);
  });

  it('publishes the public half as a JWKS with the RFC 7638 thumbprint as kid', async () => {
    const key = await DaemonSigningKey.load({ pem: null, keysDir });
    const jwks = key.jwks();
    expect(jwks).toEqual({
      keys: [{ kty: 'OKP', crv: 'Ed25519', x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), kid: key.kid, alg: 'EdDSA', use: 'sig' }],
    });
    const [jwk] = jwks.keys;
    expect(jwk && 'd' in jwk).toBe(false);
    expect(key.kid).toBe(await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: jwk?.x }));
    expect(jwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: jwk?.x ?? '' })).toBe(key.kid);
    const signature = key.sign('v1\nmessage');
    expect(signature).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk?.x ?? '' }, format: 'jwk' });
    expect(verify(null, Buffer.from('v1\nmessage'), publicKey, Buffer.from(signature, 'base64'))).toBe(true);
  });
});

describe('DaemonSigningKeyring', () => {
  let keysDir: string;
  const newPem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

  beforeEach(async () => {
    keysDir = join(await mkdtemp(join(tmpdir(), 'daemon-keyring-')), 'keys');
  });

  afterEach(async () => {
    await rm(join(keysDir, '..'), { recursive: true, force: true });
  });

  it('rotation by configuration: signs with DAEMON_SIGNING_KEY, publishes DAEMON_SIGNING_KEY_PREVIOUS after it', async () => {
    const [oldPem, newKeyPem] = [newPem(), newPem()];
    const keyring = await DaemonSigningKeyring.load({ pem: newKeyPem, previousPem: oldPem.replace(/\n/g, '\\n'), keysDir });
    const [current, previous] = [DaemonSigningKey.fromPem(newKeyPem), DaemonSigningKey.fromPem(oldPem)];
    expect(keyring.kid).toBe(current.kid);
    expect(keyring.jwks()).toEqual({ keys: [current.jwk(), previous.jwk()] });
    expect(keyring.sign('m')).toBe(current.sign('m'));
    // No rotation: one key; the same key given twice is published once.
    expect((await DaemonSigningKeyring.load({ pem: newKeyPem, previousPem: null, keysDir })).jwks()).toEqual(current.jwks());
    expect((await DaemonSigningKeyring.load({ pem: newKeyPem, previousPem: newKeyPem, keysDir })).jwks()).toEqual(current.jwks());
  });

  it('rotation by files: ed25519.previous.pem is published next to the current key until it is removed', async () => {
    const generated = await DaemonSigningKeyring.load({ pem: null, previousPem: null, keysDir });
    const directory = join(keysDir, DAEMON_SIGNING_DIR);
    const oldPem = await readFile(join(directory, DAEMON_SIGNING_KEY_FILE), 'utf8');
    // The operator's steps: the current key becomes the previous one, a new current key takes its place.
    await writeFile(join(directory, DAEMON_SIGNING_PREVIOUS_KEY_FILE), oldPem, { mode: 0o600 });
    await rm(join(directory, DAEMON_SIGNING_KEY_FILE));
    const rotated = await DaemonSigningKeyring.load({ pem: null, previousPem: null, keysDir });
    expect(rotated.kid).not.toBe(generated.kid);
    expect(rotated.jwks().keys.map((jwk) => jwk.kid)).toEqual([rotated.kid, generated.kid]);
    await rm(join(directory, DAEMON_SIGNING_PREVIOUS_KEY_FILE));
    expect((await DaemonSigningKeyring.load({ pem: null, previousPem: null, keysDir })).jwks().keys.map((jwk) => jwk.kid)).toEqual([
      rotated.kid,
    ]);
  });

  it('refuses a previous key that is not an Ed25519 private key', async () => {
    await expect(DaemonSigningKeyring.load({ pem: newPem(), previousPem: 'not a key', keysDir })).rejects.toThrow(
      /not a readable PKCS#8 PEM private key/,
    );
  });
});
