import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { LOCAL_OIDC_ISSUER, OAUTH_AUDIENCE } from '@interns/contracts';
import { LOCAL_OIDC_JWKS_FILE, LOCAL_OIDC_PRIVATE_KEY_FILE, LocalOidcIssuer, localOidcDir } from './local-oidc-issuer';

describe('LocalOidcIssuer', () => {
  let dataDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'interns-oidc-'));
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('creates one key pair when many opens race, with a private file only its owner can read', async () => {
    const issuers = await Promise.all(Array.from({ length: 8 }, () => LocalOidcIssuer.open(dataDir)));
    const kids = new Set(issuers.map((issuer) => issuer.kid));
    expect(kids.size).toBe(1);
    const [first] = issuers;
    const directory = localOidcDir(dataDir);
    expect((await readdir(directory)).sort()).toEqual([LOCAL_OIDC_JWKS_FILE, LOCAL_OIDC_PRIVATE_KEY_FILE].sort());
    expect((await stat(join(directory, LOCAL_OIDC_PRIVATE_KEY_FILE))).mode & 0o777).toBe(0o600);
    const published = JSON.parse(await readFile(join(directory, LOCAL_OIDC_JWKS_FILE), 'utf8'));
    expect(published).toEqual(first?.jwks());
    expect(published.keys[0]).not.toHaveProperty('d');
    expect((await LocalOidcIssuer.open(dataDir)).kid).toBe(first?.kid);
  });

  it('signs tokens the published keys verify, with the contract claims', async () => {
    const issuer = await LocalOidcIssuer.open(dataDir);
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
    await LocalOidcIssuer.open(dataDir);
    await writeFile(join(localOidcDir(dataDir), LOCAL_OIDC_PRIVATE_KEY_FILE), '{"kty":"RSA"}');
    await expect(LocalOidcIssuer.open(dataDir)).rejects.toThrow('is not a usable signing key');
  }, 10000);
});
