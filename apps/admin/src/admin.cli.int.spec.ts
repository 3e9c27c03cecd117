// Longer than 300 lines on purpose: the admin CLI's commands share one database and prefix, set up once.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeJwt } from 'jose';
import type { DataSource } from 'typeorm';
import { subjectsFor } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { CredentialResolver, hashApiKey, IDENTITY_SCHEMA, identityMigrations } from '@interns/identity';
import { connectNats } from '@interns/messaging';
import { createTestDatabase, TestDatabase, testNatsPrefix } from '@interns/testing';
import { VaultOpener, VaultSealer } from '@interns/vault';
import { runAdmin } from './admin.cli';

const WS_A = '2d2d2d2d-0000-4000-8000-00000000000a';
const WS_B = '2d2d2d2d-0000-4000-8000-00000000000b';
const KNOWN_INTERN = '2d2d2d2d-0000-4000-8000-0000000000f1';

const identityFile = {
  organizations: [
    { id: 'org-a', name: 'A', programme: true, lifecycle_writes: true },
    { id: 'org-b', name: 'B', programme: true, lifecycle_writes: true },
  ],
  workspaces: [
    { id: WS_A, organization_id: 'org-a', name: 'a' },
    { id: WS_B, organization_id: 'org-b', name: 'b' },
  ],
  members: [
    { id: 'alice', organization_id: 'org-a', active: true },
    { id: 'bob', organization_id: 'org-b', active: true },
  ],
  api_keys: [
    { key: 'admin-spec-user', kind: 'user', organization_id: 'org-a', workspace_id: WS_A, member_id: 'alice' },
    { key: 'admin-spec-mgmt', kind: 'management', organization_id: 'org-a' },
  ],
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('admin command', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let dir: string;
  let env: Record<string, string>;
  let nc: NatsConnection;
  const prefix = testNatsPrefix();
  const lifecycleInstalls: string[] = [];

  const admin = async (...argv: string[]): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const code = await runAdmin(argv, env, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  };
  const json = (run: Run) => {
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(run.stdout);
  };
  const failure = (run: Run) => {
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^error: [^\n]+\n$/);
    return run.stderr.trim();
  };
  const resolver = () =>
    new CredentialResolver({
      dataSource,
      cacheTtlMs: 0,
      // KEYS_DIR's default, <DATA_DIR>/keys: where `oauth-token` must have put the development issuer's keys.
      oidc: { issuer: null, jwksUrl: null, jwksFile: null, keysDir: join(dir, 'data', 'keys'), localDev: true },
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'interns-admin-'));
    env = {
      DATABASE_URL: db.url,
      DATA_DIR: join(dir, 'data'),
      NATS_URL: 'nats://127.0.0.1:4222',
      NATS_PREFIX: prefix,
    };
    await writeFile(join(dir, 'identity.json'), JSON.stringify(identityFile));
    // A stand-in for the lifecycle service's intern-owner query, speaking the NestJS packet format.
    nc = await connectNats({ url: env['NATS_URL'] as string, name: 'admin-spec-lifecycle' });
    nc.subscribe(subjectsFor(prefix).lifecycle.internOwner, {
      callback: (_error, msg) => {
        const packet = msg.json<{ id: string; data: { internId: string } }>();
        const reply =
          packet.data.internId === KNOWN_INTERN
            ? { id: packet.id, isDisposed: true, response: { internId: KNOWN_INTERN, organizationId: 'org-b', workspaceId: WS_B } }
            : { id: packet.id, isDisposed: true, err: { kind: 'service_error', reason: 'not_found', message: 'not found' } };
        msg.respond(JSON.stringify(reply));
      },
    });
    // ... and for its record-chatapp-install command, which remembers what it was told.
    nc.subscribe(subjectsFor(prefix).lifecycle.recordChatappInstall, {
      callback: (_error, msg) => {
        const packet = msg.json<{ id: string; data: { workspaceId: string; correlationId: string } }>();
        lifecycleInstalls.push(packet.data.workspaceId);
        const released = lifecycleInstalls.filter((id) => id === packet.data.workspaceId).length === 1 ? 2 : 0;
        msg.respond(JSON.stringify({ id: packet.id, isDisposed: true, response: { workspaceId: packet.data.workspaceId, released } }));
      },
    });
    await nc.flush();
  });

  afterAll(async () => {
    await nc.close();
    await dataSource?.destroy();
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  });

  describe('apply', () => {
    it('creates the database schema, applies the file and is idempotent', async () => {
      const counts = { organizations: 2, workspaces: 2, members: 2, api_keys: 2, deactivated_members: [], organizations_left_programme: [], revoked_daemon_tokens: 0 };
      expect(json(await admin('apply', join(dir, 'identity.json')))).toEqual(counts);
      expect(json(await admin('apply', join(dir, 'identity.json')))).toEqual(counts);
      dataSource = await openDatabase({
        url: db.url,
        schema: IDENTITY_SCHEMA,
        migrations: identityMigrations,
        applicationName: 'admin.cli.int.spec',
        migrate: false,
      });
      const rows = await dataSource.query('SELECT key_hash FROM identity.api_keys ORDER BY key_hash');
      expect(rows.map((r: { key_hash: string }) => r.key_hash).sort()).toEqual(
        [hashApiKey('admin-spec-user'), hashApiKey('admin-spec-mgmt')].sort(),
      );
    });

    it('reports a missing file, bad JSON and validation errors with their path', async () => {
      expect(failure(await admin('apply', join(dir, 'missing.json')))).toBe(`error: ${join(dir, 'missing.json')}: no such file`);
      await writeFile(join(dir, 'broken.json'), '{"organizations": [');
      expect(failure(await admin('apply', join(dir, 'broken.json')))).toMatch(/broken\.json is not valid JSON: /);
      await writeFile(
        join(dir, 'invalid.json'),
        JSON.stringify({ api_keys: [{ key: 'admin-spec-x', kind: 'user', organization_id: 'org-a', workspace_id: WS_A, member_id: 'bob' }] }),
      );
      expect(failure(await admin('apply', join(dir, 'invalid.json')))).toBe(
        'error: api_keys[0].member_id: member bob belongs to organization org-b, not org-a',
      );
      expect(failure(await admin('apply'))).toMatch(/^error: apply: expected exactly one argument/);
      expect(failure(await admin('apply', 'a.json', 'b.json'))).toMatch(/^error: apply: expected exactly one argument/);
    });
  });

  describe('oauth-token', () => {
    it('prints a token the gateway resolver trusts, for an hour by default', async () => {
      const { access_token: token } = json(
        await admin('oauth-token', '--member', 'alice', '--workspace', WS_A, '--scope', 'interns  vault:read'),
      );
      const claims = decodeJwt(token);
      expect(claims).toMatchObject({ sub: 'alice', org: 'org-a', workspace_id: WS_A, scope: 'interns vault:read' });
      expect(Number(claims.exp) - Number(claims.iat)).toBe(3600);
      expect(await resolver().resolve(`Bearer ${token}`)).toMatchObject({
        kind: 'oauth', memberId: 'alice', workspaceId: WS_A, scopes: ['interns', 'vault:read'],
      });
      const short = json(await admin('oauth-token', '--member', 'alice', '--workspace', WS_A, '--scope', '', '--ttl', '5'));
      const shortClaims = decodeJwt(short.access_token);
      expect(Number(shortClaims.exp) - Number(shortClaims.iat)).toBe(5);
      expect(shortClaims['scope']).toBe('');
    });

    it('refuses members outside the workspace organization and bad flags', async () => {
      expect(failure(await admin('oauth-token', '--member', 'bob', '--workspace', WS_A, '--scope', 'interns'))).toBe(
        `error: member bob belongs to organization org-b, not to org-a of workspace ${WS_A}`,
      );
      expect(failure(await admin('oauth-token', '--member', 'nobody', '--workspace', WS_A, '--scope', 'interns'))).toBe(
        'error: member nobody not found',
      );
      expect(failure(await admin('oauth-token', '--member', 'alice', '--workspace', randomUUID(), '--scope', 'x'))).toMatch(
        /^error: workspace .* not found$/,
      );
      expect(failure(await admin('oauth-token', '--workspace', WS_A, '--scope', 'interns'))).toBe(
        'error: oauth-token: missing --member <member_id>',
      );
      expect(failure(await admin('oauth-token', '--member', 'alice', '--workspace', WS_A))).toBe(
        'error: oauth-token: missing --scope <scopes>',
      );
      expect(failure(await admin('oauth-token', '--member', 'alice', '--workspace', 'ws', '--scope', 'interns'))).toBe(
        'error: oauth-token: --workspace must be a uuid, got "ws"',
      );
      expect(failure(await admin('oauth-token', '--member', 'alice', '--workspace', WS_A, '--scope', 'i', '--ttl', '0'))).toMatch(
        /^error: oauth-token: --ttl must be an integer/,
      );
      expect(failure(await admin('oauth-token', '--member', 'alice', '--workspace', WS_A, '--scope', 'i', '--bogus', 'x'))).toMatch(
        /^error: oauth-token: Unknown option '--bogus'/,
      );
    });
  });

  describe('chatapp-installed', () => {
    it('records the install in identity and in lifecycle, and refuses unknown workspaces', async () => {
      const output = json(await admin('chatapp-installed', '--workspace', WS_B));
      expect(output).toEqual({ workspace_id: WS_B, chatapp_installed_at: expect.stringMatching(/Z$/), released_interns: 2 });
      expect(json(await admin('chatapp-installed', '--workspace', WS_B))).toEqual({ ...output, released_interns: 0 });
      expect(lifecycleInstalls).toEqual([WS_B, WS_B]);
      const unknown = randomUUID();
      expect(failure(await admin('chatapp-installed', '--workspace', unknown))).toBe(`error: workspace ${unknown} not found`);
      expect(lifecycleInstalls).toEqual([WS_B, WS_B]);
      expect(failure(await admin('chatapp-installed'))).toBe('error: chatapp-installed: missing --workspace <uuid>');
    });

    it('says so when the lifecycle service is not running', async () => {
      const run = await runAdminWithEnv(['chatapp-installed', '--workspace', WS_A], { NATS_PREFIX: testNatsPrefix() });
      expect(failure(run)).toBe('error: lifecycle service is not running');
    });
  });

  describe('intern-key', () => {
    it("mints a key bound to the intern's organization and workspace as told by lifecycle", async () => {
      const { key } = json(await admin('intern-key', '--intern', KNOWN_INTERN));
      expect(key).toMatch(/^ik_[A-Za-z0-9_-]{32}$/);
      expect(await resolver().resolve(`Bearer ${key}`)).toMatchObject({
        kind: 'intern', internId: KNOWN_INTERN, organizationId: 'org-b', workspaceId: WS_B,
      });
      expect(json(await admin('intern-key', '--intern', KNOWN_INTERN, '--key', 'ik_chosen_by_operator'))).toEqual({
        key: 'ik_chosen_by_operator',
      });
    });

    it('reports an unknown intern, a missing lifecycle service and bad flags', async () => {
      const unknown = randomUUID();
      expect(failure(await admin('intern-key', '--intern', unknown))).toBe(`error: intern ${unknown} not found`);
      const elsewhere = { ...env, NATS_PREFIX: testNatsPrefix() };
      let stderr = '';
      const code = await runAdmin(['intern-key', '--intern', KNOWN_INTERN], elsewhere, {
        stdout: () => undefined,
        stderr: (t) => (stderr += t),
      });
      expect({ code, stderr }).toEqual({ code: 1, stderr: 'error: lifecycle service is not running\n' });
      const noBroker = await runAdminWithEnv(['intern-key', '--intern', KNOWN_INTERN], { NATS_URL: 'nats://127.0.0.1:1' });
      expect(failure(noBroker)).toMatch(/^error: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1: /);
      expect(failure(await admin('intern-key'))).toBe('error: intern-key: missing --intern <uuid>');
      expect(failure(await admin('intern-key', '--intern', 'abc'))).toBe('error: intern-key: --intern must be a uuid, got "abc"');
    });
  });

  it('prints a new vault key pair whose public key seals what its master key opens', async () => {
    const run = await admin('vault-key');
    expect(run.code).toBe(0);
    const pair = JSON.parse(run.stdout) as { master_key: string; public_key: string };
    expect(JSON.parse(pair.public_key)).toEqual({ kty: 'OKP', crv: 'X25519', x: expect.any(String) });
    const sealer = await VaultSealer.load({ masterKey: null, publicKey: pair.public_key, keysDir: '/nonexistent', nodeEnv: 'production' });
    const opener = await VaultOpener.load({ masterKey: pair.master_key, keysDir: '/nonexistent', nodeEnv: 'production' });
    expect(await opener.open(await sealer.seal('value', 'name'), 'name')).toBe('value');
    expect((await admin('vault-key')).stdout).not.toBe(run.stdout);
  });

  describe('vault-key --dir', () => {
    const mode = async (path: string) => (await stat(path)).mode & 0o777;

    it('writes the pair as VAULT_MASTER_KEY (0600) and VAULT_PUBLIC_KEY (0644) in a new 0700 directory, never printing the master key', async () => {
      const keys = join(dir, 'vault-keys-new', 'keys');
      const report = json(await admin('vault-key', '--dir', keys));
      const masterFile = join(keys, 'VAULT_MASTER_KEY');
      const publicFile = join(keys, 'VAULT_PUBLIC_KEY');
      const masterKey = await readFile(masterFile, 'utf8');
      const publicKey = await readFile(publicFile, 'utf8');
      expect(report).toEqual({ dir: keys, master_key_file: masterFile, public_key_file: publicFile, public_key: publicKey, kept: false });
      expect(JSON.stringify(report)).not.toContain((JSON.parse(masterKey) as { d: string }).d);
      expect({ dir: await mode(keys), master: await mode(masterFile), public: await mode(publicFile) }).toEqual({ dir: 0o700, master: 0o600, public: 0o644 });
      // Just the JWK (a kustomize `files:` value is the content verbatim): no trailing newline.
      expect(masterKey).toBe(masterKey.trim());
      expect(publicKey).toBe(publicKey.trim());
      const master = JSON.parse(masterKey) as { kty: string; crv: string; x: string; d: string };
      expect(master).toMatchObject({ kty: 'OKP', crv: 'X25519', d: expect.any(String) });
      expect(JSON.parse(publicKey)).toEqual({ kty: 'OKP', crv: 'X25519', x: master.x });
      const sealer = await VaultSealer.load({ masterKey: null, publicKey, keysDir: '/nonexistent', nodeEnv: 'production' });
      const opener = await VaultOpener.load({ masterKey, keysDir: '/nonexistent', nodeEnv: 'production' });
      expect(await opener.open(await sealer.seal('value', 'name'), 'name')).toBe('value');
    });

    it('keeps a pair already there when run again', async () => {
      const keys = join(dir, 'vault-keys-rerun');
      const first = json(await admin('vault-key', '--dir', keys));
      const masterKey = await readFile(join(keys, 'VAULT_MASTER_KEY'), 'utf8');
      const again = json(await admin('vault-key', '--dir', keys));
      expect(again).toEqual({ ...first, kept: true });
      expect(await readFile(join(keys, 'VAULT_MASTER_KEY'), 'utf8')).toBe(masterKey);
      expect(await readFile(join(keys, 'VAULT_PUBLIC_KEY'), 'utf8')).toBe(first.public_key);
    });

    it('refuses half a pair, or two files that are not one pair', async () => {
      const keys = join(dir, 'vault-keys-half');
      json(await admin('vault-key', '--dir', keys));
      await rm(join(keys, 'VAULT_PUBLIC_KEY'));
      expect(failure(await admin('vault-key', '--dir', keys))).toBe(
        `error: vault-key: ${keys} holds VAULT_MASTER_KEY but not VAULT_PUBLIC_KEY: half a pair; restore VAULT_PUBLIC_KEY, or delete VAULT_MASTER_KEY to generate a new pair (values sealed to the old one are lost)`,
      );
      await expect(readFile(join(keys, 'VAULT_PUBLIC_KEY'), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });

      const other = join(dir, 'vault-keys-public-only');
      json(await admin('vault-key', '--dir', other));
      await rm(join(other, 'VAULT_MASTER_KEY'));
      expect(failure(await admin('vault-key', '--dir', other))).toMatch(/holds VAULT_PUBLIC_KEY but not VAULT_MASTER_KEY: half a pair/);
      await expect(readFile(join(other, 'VAULT_MASTER_KEY'), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });

      // The other pair's public key beside this master key: two files, but not one pair.
      await writeFile(join(keys, 'VAULT_PUBLIC_KEY'), await readFile(join(other, 'VAULT_PUBLIC_KEY'), 'utf8'));
      expect(failure(await admin('vault-key', '--dir', keys))).toMatch(/VAULT_PUBLIC_KEY is not the public key of .*VAULT_MASTER_KEY$/);
    });

    it('rejects unknown flags', async () => {
      expect(failure(await admin('vault-key', '--out', 'x'))).toMatch(/^error: vault-key: Unknown option '--out'/);
    });
  });

  it('rejects unknown and missing commands', async () => {
    expect(failure(await admin('launch'))).toBe(
      'error: unknown command "launch"; expected one of quickstart, reset, apply, intern-key, oauth-token, chatapp-installed, audit, nats-setup, db-setup, vault-key',
    );
    expect(failure(await admin())).toMatch(/^error: missing command/);
    expect(failure(await runAdminWithEnv(['apply', 'x.json'], { GATEWAY_PORT: 'abc' }))).toBe(
      'error: GATEWAY_PORT must be a non-negative integer, got "abc"',
    );
  });

  async function runAdminWithEnv(argv: string[], extra: Record<string, string>): Promise<Run> {
    let stdout = '';
    let stderr = '';
    const code = await runAdmin(argv, { ...env, ...extra }, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  }
});
