import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jest } from '@jest/globals';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { DataSource } from 'typeorm';
import { LOCAL_OIDC_ISSUER, OAUTH_AUDIENCE } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { createTestDatabase, TestDatabase } from '@interns/testing';
import { CredentialResolver } from './credential.resolver';
import { IDENTITY_SCHEMA } from './identity.schema';
import { IdentityStore } from './identity.store';
import { LocalOidcIssuer } from './local-oidc-issuer';
import { identityMigrations } from './migrations';
import type { OidcOptions } from './oauth-token.verifier';

const WS_A = '1c1c1c1c-0000-4000-8000-00000000000a';
const WS_A2 = '1c1c1c1c-0000-4000-8000-0000000000a2';
const WS_B = '1c1c1c1c-0000-4000-8000-00000000000b';
const EXTERNAL_ISSUER = 'https://issuer.example.test';

const file = {
  organizations: [
    { id: 'org-a', name: 'A', programme: true, lifecycle_writes: false, chatapp_install_required: true },
    { id: 'org-b', name: 'B', programme: false, lifecycle_writes: true },
  ],
  workspaces: [
    { id: WS_A, organization_id: 'org-a', name: 'a' },
    { id: WS_A2, organization_id: 'org-a', name: 'a2' },
    { id: WS_B, organization_id: 'org-b', name: 'b' },
  ],
  members: [
    { id: 'alice', organization_id: 'org-a', active: true },
    { id: 'ann', organization_id: 'org-a', active: false },
    { id: 'bob', organization_id: 'org-b', active: true },
  ],
  api_keys: [
    { key: 'resolver-user', kind: 'user', organization_id: 'org-a', workspace_id: WS_A, member_id: 'alice' },
    { key: 'resolver-user-inactive', kind: 'user', organization_id: 'org-a', workspace_id: WS_A, member_id: 'ann' },
    { key: 'resolver-org', kind: 'organization', organization_id: 'org-a', workspace_id: WS_A2 },
    { key: 'resolver-mgmt', kind: 'management', organization_id: 'org-b' },
    { key: 'resolver-disabled', kind: 'organization', organization_id: 'org-a', workspace_id: WS_A, disabled: true },
    { key: 'resolver-revoked', kind: 'organization', organization_id: 'org-b', workspace_id: WS_B },
  ],
};

const organizationA = { programme: true, lifecycleWrites: false, chatappInstallRequired: true };

describe('CredentialResolver', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: IdentityStore;
  let dataDir: string;
  let local: LocalOidcIssuer;

  const resolver = (oidc: Partial<OidcOptions> = {}, cacheTtlMs = 60000) =>
    new CredentialResolver({
      dataSource,
      cacheTtlMs,
      oidc: { issuer: null, jwksUrl: null, jwksFile: null, keysDir: dataDir, localDev: true, ...oidc },
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: IDENTITY_SCHEMA,
      migrations: identityMigrations,
      applicationName: 'credential.resolver.int.spec',
      migrate: true,
    });
    store = new IdentityStore(dataSource);
    await store.apply(file);
    dataDir = await mkdtemp(join(tmpdir(), 'interns-resolver-'));
    local = await LocalOidcIssuer.open({ keysDir: dataDir });
  });

  afterAll(async () => {
    await dataSource.destroy();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  describe('API keys', () => {
    it('resolves a user key with its member, workspace and organization flags', async () => {
      const resolved = await resolver().resolve('Bearer resolver-user');
      expect(resolved).toEqual({
        kind: 'user',
        keyId: expect.any(String),
        organizationId: 'org-a',
        workspaceId: WS_A,
        memberId: 'alice',
        internId: null,
        scopes: [],
        memberActive: true,
        organization: organizationA,
        workspaceChatappInstalled: false,
      });
    });

    it('resolves organization, management and intern keys', async () => {
      const r = resolver();
      expect(await r.resolve('Bearer resolver-org')).toMatchObject({
        kind: 'organization', organizationId: 'org-a', workspaceId: WS_A2, memberId: null, internId: null, memberActive: true,
      });
      expect(await r.resolve('Bearer resolver-mgmt')).toMatchObject({
        kind: 'management', organizationId: 'org-b', workspaceId: null, memberId: null, memberActive: true,
        organization: { programme: false, lifecycleWrites: true, chatappInstallRequired: false },
        workspaceChatappInstalled: false,
      });
      const internId = randomUUID();
      const key = await store.createInternKey({ internId, organizationId: 'org-b', workspaceId: WS_B });
      expect(await r.resolve(`Bearer ${key}`)).toMatchObject({
        kind: 'intern', organizationId: 'org-b', workspaceId: WS_B, memberId: null, internId, memberActive: true, scopes: [],
      });
    });

    it('reports an inactive member and an installed chat app', async () => {
      await store.recordChatappInstall(WS_A);
      const resolved = await resolver().resolve('Bearer resolver-user-inactive');
      expect(resolved).toMatchObject({ memberId: 'ann', memberActive: false, workspaceChatappInstalled: true });
    });

    it('answers null for a missing, malformed, unknown or disabled credential', async () => {
      const r = resolver();
      expect(await r.resolve(undefined)).toBeNull();
      expect(await r.resolve('')).toBeNull();
      expect(await r.resolve('resolver-user')).toBeNull();
      expect(await r.resolve('Basic resolver-user')).toBeNull();
      expect(await r.resolve('Bearer')).toBeNull();
      expect(await r.resolve('Bearer resolver-user extra')).toBeNull();
      expect(await r.resolve('Bearer no-such-key')).toBeNull();
      expect(await r.resolve('Bearer resolver-disabled')).toBeNull();
      expect(await r.resolve(`Bearer ${'x'.repeat(9000)}`)).toBeNull();
    });

    it('stops accepting a disabled key once the cache TTL has passed', async () => {
      const r = resolver({}, 300);
      expect(await r.resolve('Bearer resolver-revoked')).not.toBeNull();
      await store.apply({
        api_keys: [{ key: 'resolver-revoked', kind: 'organization', organization_id: 'org-b', workspace_id: WS_B, disabled: true }],
      });
      // Still trusted from the cache for at most the TTL...
      expect(await r.resolve('Bearer resolver-revoked')).not.toBeNull();
      await sleep(400);
      expect(await r.resolve('Bearer resolver-revoked')).toBeNull();
    });

    it('caches negative answers too, and re-reads after the TTL', async () => {
      const r = resolver({}, 300);
      expect(await r.resolve('Bearer resolver-late')).toBeNull();
      await store.apply({ api_keys: [{ key: 'resolver-late', kind: 'management', organization_id: 'org-a' }] });
      expect(await r.resolve('Bearer resolver-late')).toBeNull();
      await sleep(400);
      expect(await r.resolve('Bearer resolver-late')).toMatchObject({ kind: 'management' });
    });

    it('shares one query between concurrent lookups of the same credential', async () => {
      const r = resolver();
      const query = jest.spyOn(dataSource, 'query');
      try {
        const results = await Promise.all(Array.from({ length: 20 }, () => r.resolve('Bearer resolver-org')));
        expect(new Set(results).size).toBe(1);
        expect(query).toHaveBeenCalledTimes(1);
        await r.resolve('Bearer resolver-org');
        expect(query).toHaveBeenCalledTimes(1);
      } finally {
        query.mockRestore();
      }
    });

    it('hands out results nobody can alter for the next caller', async () => {
      const r = resolver();
      const first = await r.resolve('Bearer resolver-user');
      expect(() => first?.scopes.push('interns')).toThrow();
      expect((await r.resolve('Bearer resolver-user'))?.scopes).toEqual([]);
    });
  });

  describe('OAuth access tokens from the local development issuer', () => {
    const claims = { sub: 'alice', org: 'org-a', workspace_id: WS_A, scope: 'interns vault:read', ttlSeconds: 300 };

    it('resolves a valid token to its member, workspace and scopes', async () => {
      const token = await local.sign(claims);
      expect(await resolver().resolve(`Bearer ${token}`)).toEqual({
        kind: 'oauth',
        keyId: null,
        organizationId: 'org-a',
        workspaceId: WS_A,
        memberId: 'alice',
        internId: null,
        scopes: ['interns', 'vault:read'],
        memberActive: true,
        organization: organizationA,
        workspaceChatappInstalled: true,
      });
    });

    it('reports an inactive member', async () => {
      const token = await local.sign({ ...claims, sub: 'ann', scope: '' });
      expect(await resolver().resolve(`Bearer ${token}`)).toMatchObject({ memberId: 'ann', memberActive: false, scopes: [] });
    });

    it('refuses expired tokens, bad signatures and unknown or foreign members and workspaces', async () => {
      const r = resolver();
      expect(await r.resolve(`Bearer ${await local.sign({ ...claims, ttlSeconds: -10 })}`)).toBeNull();
      const [header, payload] = (await local.sign(claims)).split('.');
      const otherSignature = (await local.sign({ ...claims, sub: 'ann' })).split('.')[2];
      expect(await r.resolve(`Bearer ${header}.${payload}.${otherSignature}`)).toBeNull();
      expect(await r.resolve('Bearer not.a.jwt')).toBeNull();
      expect(await r.resolve(`Bearer ${await local.sign({ ...claims, sub: 'nobody' })}`)).toBeNull();
      expect(await r.resolve(`Bearer ${await local.sign({ ...claims, sub: 'bob' })}`)).toBeNull();
      expect(await r.resolve(`Bearer ${await local.sign({ ...claims, workspace_id: WS_B })}`)).toBeNull();
      expect(await r.resolve(`Bearer ${await local.sign({ ...claims, workspace_id: randomUUID() })}`)).toBeNull();
      expect(await r.resolve(`Bearer ${await local.sign({ ...claims, workspace_id: 'nope' })}`)).toBeNull();
      expect(await r.resolve(`Bearer ${await local.sign({ ...claims, org: 'org-b' })}`)).toBeNull();
    });

    it('never trusts a cached token past its expiry', async () => {
      const r = resolver({}, 60000);
      const token = await local.sign({ ...claims, ttlSeconds: 1 });
      expect(await r.resolve(`Bearer ${token}`)).not.toBeNull();
      await sleep(1100);
      expect(await r.resolve(`Bearer ${token}`)).toBeNull();
    });

    it('refuses a token signed by a key the issuer does not publish', async () => {
      const stranger = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const token = await new SignJWT({ org: 'org-a', workspace_id: WS_A, scope: 'interns' })
        .setProtectedHeader({ alg: 'EdDSA', kid: local.kid })
        .setSubject('alice')
        .setIssuer(LOCAL_OIDC_ISSUER)
        .setAudience(OAUTH_AUDIENCE)
        .setExpirationTime('5m')
        .sign(stranger.privateKey);
      expect(await resolver().resolve(`Bearer ${token}`)).toBeNull();
    });
  });

  describe('OAuth access tokens from an external issuer', () => {
    let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
    let jwks: { keys: object[] };
    let jwksFile: string;
    let server: Server;
    let baseUrl: string;

    const token = (overrides: { aud?: string; iss?: string; sub?: string; exp?: string } = {}) =>
      new SignJWT({ org: 'org-a', workspace_id: WS_A, scope: 'interns' })
        .setProtectedHeader({ alg: 'ES256', kid: 'external-1' })
        .setSubject(overrides.sub ?? 'alice')
        .setIssuer(overrides.iss ?? EXTERNAL_ISSUER)
        .setAudience(overrides.aud ?? OAUTH_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(overrides.exp ?? '5m')
        .sign(privateKey);

    beforeAll(async () => {
      const pair = await generateKeyPair('ES256');
      privateKey = pair.privateKey;
      jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'external-1', alg: 'ES256', use: 'sig' }] };
      jwksFile = join(dataDir, 'external-jwks.json');
      await writeFile(jwksFile, JSON.stringify(jwks));
      server = createServer((request, response) => {
        response.setHeader('content-type', 'application/json');
        if (request.url === '/.well-known/openid-configuration') {
          response.end(JSON.stringify({ issuer: baseUrl, jwks_uri: `${baseUrl}/keys` }));
        } else if (request.url === '/keys') {
          response.end(JSON.stringify(jwks));
        } else {
          response.statusCode = 404;
          response.end('{}');
        }
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it('verifies against a configured JWKS file, checking audience and issuer', async () => {
      const r = resolver({ issuer: EXTERNAL_ISSUER, jwksFile });
      expect(await r.resolve(`Bearer ${await token()}`)).toMatchObject({ kind: 'oauth', memberId: 'alice', scopes: ['interns'] });
      expect(await r.resolve(`Bearer ${await token({ aud: 'someone-else' })}`)).toBeNull();
      expect(await r.resolve(`Bearer ${await token({ iss: 'https://evil.example.test' })}`)).toBeNull();
      expect(await r.resolve(`Bearer ${await token({ exp: '-1m' })}`)).toBeNull();
      // The development issuer is not trusted once an external one is configured.
      const devToken = await local.sign({ sub: 'alice', org: 'org-a', workspace_id: WS_A, scope: 'interns', ttlSeconds: 60 });
      expect(await r.resolve(`Bearer ${devToken}`)).toBeNull();
    });

    it('verifies against a JWKS URL', async () => {
      const r = resolver({ issuer: EXTERNAL_ISSUER, jwksUrl: `${baseUrl}/keys` });
      expect(await r.resolve(`Bearer ${await token()}`)).toMatchObject({ kind: 'oauth', memberId: 'alice' });
      expect(await r.resolve(`Bearer ${await token({ sub: 'nobody' })}`)).toBeNull();
    });

    it('finds the keys through OIDC discovery when only the issuer is configured', async () => {
      const r = resolver({ issuer: baseUrl });
      expect(await r.resolve(`Bearer ${await token({ iss: baseUrl })}`)).toMatchObject({ kind: 'oauth', memberId: 'alice' });
    });

    it('fails loudly (not as a 401) when the configured JWKS file is missing', async () => {
      const r = resolver({ issuer: EXTERNAL_ISSUER, jwksFile: join(dataDir, 'missing.json') });
      await expect(r.resolve(`Bearer ${await token()}`)).rejects.toThrow(/ENOENT/);
    });
  });
});
