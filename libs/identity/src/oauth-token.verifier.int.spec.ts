import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { OAUTH_AUDIENCE } from '@interns/contracts';
import { LocalOidcIssuer } from './local-oidc-issuer';
import { OAuthTokenVerifier, OidcOptions } from './oauth-token.verifier';

const WS = '1c1c1c1c-0000-4000-8000-00000000000a';
const EXTERNAL_ISSUER = 'https://issuer.example.test';
const CLAIMS = { sub: 'alice', org: 'org-a', workspace_id: WS, scope: 'interns' };

/** Which tokens the verifier accepts: the local issuer's trust, algorithms, lifetimes, a failing key source. */
describe('OAuthTokenVerifier', () => {
  let dataDir: string;
  let local: LocalOidcIssuer;
  const options = (overrides: Partial<OidcOptions> = {}): OidcOptions => ({
    issuer: null,
    jwksUrl: null,
    jwksFile: null,
    keysDir: dataDir,
    localDev: true,
    ...overrides,
  });

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'oauth-verifier-'));
    local = await LocalOidcIssuer.open({ keysDir: dataDir });
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  describe('the local development issuer', () => {
    it('is trusted only with localDev', async () => {
      const token = await local.sign({ ...CLAIMS, ttlSeconds: 60 });
      expect(await new OAuthTokenVerifier(options()).verify(token)).toMatchObject({ memberId: 'alice' });
      expect(await new OAuthTokenVerifier(options({ localDev: false })).verify(token)).toBeNull();
    });

    it('signs no token that would outlive the maximum token age', async () => {
      await expect(local.sign({ ...CLAIMS, ttlSeconds: 3601 })).rejects.toThrow(/at most 3600 s/);
      const short = await LocalOidcIssuer.open({ keysDir: dataDir, maxTokenAgeSeconds: 60 });
      await expect(short.sign({ ...CLAIMS, ttlSeconds: 61 })).rejects.toThrow(/OIDC_MAX_TOKEN_AGE_S/);
    });
  });

  describe('an external issuer', () => {
    type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
    let ecKey: PrivateKey;
    let rsaKey: PrivateKey;
    let jwksFile: string;

    const sign = (alg: 'ES256' | 'RS256', times: { iat?: number; exp?: number } = {}) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ org: CLAIMS.org, workspace_id: WS, scope: CLAIMS.scope })
        .setProtectedHeader({ alg, kid: alg })
        .setSubject('alice')
        .setIssuer(EXTERNAL_ISSUER)
        .setAudience(OAUTH_AUDIENCE)
        .setIssuedAt(times.iat ?? now)
        .setExpirationTime(times.exp ?? now + 300)
        .sign(alg === 'ES256' ? ecKey : rsaKey);
    };

    beforeAll(async () => {
      const ec = await generateKeyPair('ES256');
      const rsa = await generateKeyPair('RS256');
      ecKey = ec.privateKey;
      rsaKey = rsa.privateKey;
      const keys = [
        { ...(await exportJWK(ec.publicKey)), kid: 'ES256', use: 'sig' },
        { ...(await exportJWK(rsa.publicKey)), kid: 'RS256', use: 'sig' },
      ];
      jwksFile = join(dataDir, 'external-jwks.json');
      await writeFile(jwksFile, JSON.stringify({ keys }));
    });

    it('accepts only the allowed algorithms', async () => {
      const verifier = new OAuthTokenVerifier(options({ issuer: EXTERNAL_ISSUER, jwksFile, algorithms: ['RS256'] }));
      expect(await verifier.verify(await sign('RS256'))).toMatchObject({ memberId: 'alice' });
      expect(await verifier.verify(await sign('ES256'))).toBeNull();
      const byDefault = new OAuthTokenVerifier(options({ issuer: EXTERNAL_ISSUER, jwksFile }));
      expect(await byDefault.verify(await sign('ES256'))).toMatchObject({ memberId: 'alice' });
    });

    it('refuses a token that may live, or has lived, longer than the maximum token age', async () => {
      const verifier = new OAuthTokenVerifier(options({ issuer: EXTERNAL_ISSUER, jwksFile, maxTokenAgeSeconds: 600 }));
      const now = Math.floor(Date.now() / 1000);
      expect(await verifier.verify(await sign('ES256', { iat: now, exp: now + 600 }))).toMatchObject({ memberId: 'alice' });
      expect(await verifier.verify(await sign('ES256', { iat: now, exp: now + 601 }))).toBeNull();
      expect(await verifier.verify(await sign('ES256', { iat: now - 700, exp: now + 60 }))).toBeNull();
      expect(await verifier.verify(await sign('ES256', { iat: now, exp: now + 60 * 60 * 24 * 365 }))).toBeNull();
    });
  });

  describe('a failing JWKS endpoint', () => {
    let server: Server;
    let url: string;
    let hits = 0;

    beforeAll(async () => {
      server = createServer((_request, response) => {
        hits += 1;
        response.statusCode = 503;
        response.end('{}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`;
    });

    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it('is asked at most once per backoff window however many tokens arrive, and the failure is not a 401', async () => {
      const verifier = new OAuthTokenVerifier(options({ issuer: EXTERNAL_ISSUER, jwksUrl: url, keyFetchBackoffMs: 1000 }));
      const { privateKey } = await generateKeyPair('ES256');
      const token = await new SignJWT({ org: CLAIMS.org, workspace_id: WS, scope: '' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k' })
        .setSubject('alice')
        .setIssuer(EXTERNAL_ISSUER)
        .setAudience(OAUTH_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      const attempts = await Promise.allSettled(Array.from({ length: 50 }, () => verifier.verify(token)));
      for (let i = 0; i < 50; i += 1) attempts.push(...(await Promise.allSettled([verifier.verify(token)])));
      expect(attempts.every((attempt) => attempt.status === 'rejected')).toBe(true);
      expect(hits).toBe(1);

      await sleep(1100);
      await expect(verifier.verify(token)).rejects.toThrow(/could not be fetched/);
      expect(hits).toBe(2);
      // The second failure doubles the window.
      await sleep(1100);
      await expect(verifier.verify(token)).rejects.toThrow();
      expect(hits).toBe(2);
    });
  });
});
