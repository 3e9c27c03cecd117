import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { LOCAL_OIDC_ISSUER, OAUTH_AUDIENCE } from '@interns/contracts';
import { LOCAL_OIDC_JWKS_FILE, LOCAL_OIDC_PRIVATE_KEY_FILE, LocalOidcIssuer, localOidcDir } from './local-oidc-issuer';

describe('LocalOidcIssuer', () => {
  let dataDir: string;
  let keysDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'interns-oidc-'));
    keysDir = join(dataDir, 'keys');
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('creates one key pair under KEYS_DIR when many opens race, in files and directories only their owner can read', async () => {
    const issuers = await Promise.all(Array.from({ length: 8 }, () => LocalOidcIssuer.open({ keysDir, legacyDataDir: dataDir })));
    const kids = new Set(issuers.map((issuer) => issuer.kid));
    expect(kids.size).toBe(1);
    const [first] = issuers;
    const directory = localOidcDir(keysDir);
    expect(first?.directory).toBe(directory);
    expect((await readdir(directory)).sort()).toEqual([LOCAL_OIDC_JWKS_FILE, LOCAL_OIDC_PRIVATE_KEY_FILE].sort());
    for (const path of [keysDir, directory]) expect({ path, mode: (await stat(path)).mode & 0o777 }).toEqual({ path, mode: 0o700 });
    for (const name of [LOCAL_OIDC_PRIVATE_KEY_FILE, LOCAL_OIDC_JWKS_FILE]) {
      expect({ name, mode: (await stat(join(directory, name))).mode & 0o777 }).toEqual({ name, mode: 0o600 });
    }
    const published = JSON.parse(await readFile(join(directory, LOCAL_OIDC_JWKS_FILE), 'utf8'));
    expect(published).toEqual(first?.jwks());
    expect(published.keys[0]).not.toHaveProperty('d');
    expect((await LocalOidcIssuer.open({ keysDir })).kid).toBe(first?.kid);
    // Nothing under DATA_DIR itself.
    expect((await readdir(dataDir)).sort()).toEqual(['keys']);
  });

  it('moves the key pair an earlier release kept under DATA_DIR into KEYS_DIR once: tokens it signed stay valid', async () => {
    // Opened with KEYS_DIR = DATA_DIR, the issuer writes exactly the layout of releases before KEYS_DIR.
    const legacy = await LocalOidcIssuer.open({ keysDir: dataDir });
    const token = await legacy.sign({ sub: 'alice', org: 'org-a', workspace_id: '0b0b0b0b-0000-4000-8000-00000000000a', scope: 'interns', ttlSeconds: 60 });

    const issuers = await Promise.all(Array.from({ length: 4 }, () => LocalOidcIssuer.open({ keysDir, legacyDataDir: dataDir })));
    expect(issuers.map((issuer) => issuer.kid)).toEqual(issuers.map(() => legacy.kid));
    await expect(jwtVerify(token, createLocalJWKSet(issuers[0]?.jwks() ?? { keys: [] }), { issuer: LOCAL_OIDC_ISSUER, audience: OAUTH_AUDIENCE })).resolves.toBeDefined();
    const directory = localOidcDir(keysDir);
    expect((await readdir(directory)).sort()).toEqual([LOCAL_OIDC_JWKS_FILE, LOCAL_OIDC_PRIVATE_KEY_FILE].sort());
    expect((await stat(join(directory, LOCAL_OIDC_PRIVATE_KEY_FILE))).mode & 0o777).toBe(0o600);
    // Only the public JWKS stays behind, still valid for whatever reads it there.
    expect(await readdir(localOidcDir(dataDir))).toEqual([LOCAL_OIDC_JWKS_FILE]);
    expect(JSON.parse(await readFile(join(localOidcDir(dataDir), LOCAL_OIDC_JWKS_FILE), 'utf8'))).toEqual(legacy.jwks());
    expect((await LocalOidcIssuer.open({ keysDir, legacyDataDir: dataDir })).kid).toBe(legacy.kid);
  });

  it('signs tokens the published keys verify, with the contract claims', async () => {
    const issuer = await LocalOidcIssuer.open({ keysDir });
    const token = await issuer.sign({
      sub: 'alice',
      org: 'org-a',
      workspace_id: '0b0b0b0b-0000-4000-8000-00000000000a',
      scope: 'interns vault:read',
      ttlSeconds: 60,
    });
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'EdDSA', kid: issuer.kid });
    const { payload } = await jwtVerify(token, createLocalJWKSet(issuer.jwks()), {
      issuer: LOCAL_OIDC_ISSUER,
      audience: OAUTH_AUDIENCE,
    });
    expect(payload).toMatchObject({
      sub: 'alice',
      org: 'org-a',
      workspace_id: '0b0b0b0b-0000-4000-8000-00000000000a',
      scope: 'interns vault:read',
    });
    expect(Number(payload.exp) - Number(payload.iat)).toBe(60);
  });

  it('refuses a corrupt key file instead of replacing it', async () => {
    await LocalOidcIssuer.open({ keysDir });
    await writeFile(join(localOidcDir(keysDir), LOCAL_OIDC_PRIVATE_KEY_FILE), '{"kty":"RSA"}');
    await expect(LocalOidcIssuer.open({ keysDir })).rejects.toThrow('is not a usable signing key');
  }, 10000);
});
