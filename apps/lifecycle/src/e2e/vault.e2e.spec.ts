/**
 * End to end: the vault (interface section 18) through the real gateway and lifecycle. Every route and shape, the
 * name, value and host rules, who may see which vault, fingerprints, copy, the audit, an intern's deletion, and a
 * value that appears in no response, log line, stored row or database dump.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { VAULT_MASTER_KEY_FILE, VaultOpener } from '@interns/vault';
import { Platform } from '@interns/testing';
import {
  API,
  createIntern,
  eventually,
  IDENTITIES,
  ISO_MS,
  KEYS,
  oauthToken,
  query,
  WS_MAIN,
} from '@interns/testing/e2e';

let platform: Platform;
let oauth: { interns: string; vaultOnly: string };
/** Unique per run, so a search for it finds only what this test stored. */
const VALUE = `ghp_${randomUUID().replace(/-/g, '')}`;
const HOSTS = ['api.github.com'];
const SECRET_KEYS = ['created_at', 'fingerprint', 'hosts', 'name'];

const put = (path: string, json: unknown, token: string = KEYS.alice) => platform.api(`${API}/vault${path}`, { method: 'PUT', token, json });
const get = (path: string, token: string = KEYS.alice) => platform.api(`${API}/vault${path}`, { token });
const del = (path: string, token: string = KEYS.alice) => platform.api(`${API}/vault${path}`, { method: 'DELETE', token });
const copy = (internId: string, names: unknown, token: string = KEYS.alice) =>
  platform.api(`${API}/vault/interns/${internId}/secrets/copy`, { method: 'POST', token, json: { names } });

function expectRefused(answer: { status: number; body: { error?: { metadata?: { reason?: string } } } }, status: number, reason: string): void {
  expect({ status: answer.status, reason: answer.body.error?.metadata?.reason }).toEqual({ status, reason });
}

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities(IDENTITIES);
  oauth = { interns: await oauthToken(platform, 'interns'), vaultOnly: await oauthToken(platform, 'vault:read') };
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

describe('workspace secrets', () => {
  it('creates, lists, replaces and deletes a secret, answering metadata only', async () => {
    const created = await put('/secrets/github_token', { value: VALUE, hosts: ['API.GitHub.com.', 'api.github.com'] });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body.data).sort()).toEqual(SECRET_KEYS);
    expect(created.body.data).toEqual({ name: 'github_token', hosts: HOSTS, fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/), created_at: expect.stringMatching(ISO_MS) });
    expect(created.text).not.toContain(VALUE);

    const listed = await get('/secrets', KEYS.org);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ data: [created.body.data], has_more: false });

    // The same value again: the same fingerprint; another value: another one.
    const again = await put('/secrets/github_token', { value: VALUE, hosts: ['api.github.com', 'uploads.github.com'] });
    expect(again.body.data.fingerprint).toBe(created.body.data.fingerprint);
    expect(again.body.data.hosts).toEqual(['api.github.com', 'uploads.github.com']);
    const other = await put('/secrets/other_token', { value: `${VALUE}x`, hosts: HOSTS });
    expect(other.body.data.fingerprint).not.toBe(created.body.data.fingerprint);

    const deleted = await del('/secrets/other_token');
    expect({ status: deleted.status, text: deleted.text }).toEqual({ status: 204, text: '' });
    expectRefused(await del('/secrets/other_token'), 404, 'not_found');
  });

  it('pages by name with limit and offset', async () => {
    for (const name of ['page_c', 'page_a', 'page_b']) expect((await put(`/secrets/${name}`, { value: name, hosts: HOSTS })).status).toBe(200);
    const first = await get('/secrets?limit=2');
    expect(first.body.data.map((secret: { name: string }) => secret.name)).toEqual(['github_token', 'page_a']);
    expect(first.body.has_more).toBe(true);
    const rest = await get('/secrets?limit=2&offset=2');
    expect(rest.body).toMatchObject({ has_more: false });
    expect(rest.body.data.map((secret: { name: string }) => secret.name)).toEqual(['page_b', 'page_c']);
    expectRefused(await get('/secrets?limit=0'), 400, 'invalid_body');
    expectRefused(await get('/secrets?limit=101'), 400, 'invalid_body');
    expectRefused(await get('/secrets?offset=10001'), 400, 'invalid_body');
    for (const name of ['page_a', 'page_b', 'page_c']) expect((await del(`/secrets/${name}`)).status).toBe(204);
  });

  it('keeps each workspace to its own secrets', async () => {
    expect((await get('/secrets', KEYS.aliceOther)).body).toEqual({ data: [], has_more: false });
    expectRefused(await del('/secrets/github_token', KEYS.aliceOther), 404, 'not_found');
  });
});

describe('the rules of a write', () => {
  it.each([
    ['a name with a capital', '/secrets/Github_token', { value: 'v', hosts: HOSTS }, 'secret name must be lowercase'],
    ['a name with a double underscore', '/secrets/github__token', { value: 'v', hosts: HOSTS }, 'secret name must be lowercase'],
    ['a name with a trailing underscore', '/secrets/github_', { value: 'v', hosts: HOSTS }, 'secret name must be lowercase'],
    ['a name starting with a digit', '/secrets/1token', { value: 'v', hosts: HOSTS }, 'secret name must be lowercase'],
    ['a name of 256 characters', `/secrets/${'a'.repeat(256)}`, { value: 'v', hosts: HOSTS }, 'secret name must be 1-255 characters'],
    ['an empty value', '/secrets/token', { value: '', hosts: HOSTS }, 'value: value must be 1-65536 characters'],
    ['a value of 65537 characters', '/secrets/token', { value: 'v'.repeat(65537), hosts: HOSTS }, 'value: value must be 1-65536 characters'],
    ['no hosts', '/secrets/token', { value: 'v', hosts: [] }, 'hosts: hosts must name at least one host'],
    ['101 hosts', '/secrets/token', { value: 'v', hosts: Array.from({ length: 101 }, (_, i) => `h${i}.example.com`) }, 'hosts must name at most 100 hosts'],
    ['a scheme', '/secrets/token', { value: 'v', hosts: ['https://api.github.com'] }, 'is not a hostname'],
    ['a port', '/secrets/token', { value: 'v', hosts: ['api.github.com:443'] }, 'is not a hostname'],
    ['a path', '/secrets/token', { value: 'v', hosts: ['api.github.com/x'] }, 'is not a hostname'],
    ['a wildcard', '/secrets/token', { value: 'v', hosts: ['*.github.com'] }, 'is not a hostname'],
    ['an empty host', '/secrets/token', { value: 'v', hosts: [''] }, 'is not a hostname'],
    ['an unknown field', '/secrets/token', { value: 'v', hosts: HOSTS, extra: 1 }, 'unknown field: extra'],
  ])('refuses %s with 400 naming the rule', async (_case, path, body, message) => {
    const answer = await put(path, body);
    expectRefused(answer, 400, 'invalid_body');
    expect(answer.body.error.message).toContain(message);
  });

  it('refuses a body past 425000 bytes (413) and one that is not JSON (415)', async () => {
    expectRefused(await put('/secrets/token', { value: 'v'.repeat(425_000), hosts: HOSTS }), 413, 'payload_too_large');
    expectRefused(await platform.api(`${API}/vault/secrets/token`, { method: 'PUT', token: KEYS.alice, raw: 'value', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  });
});

describe('who may use the vault', () => {
  it('answers 401 to a management key or no credential, 404 to an intern key, outside the programme', async () => {
    expect((await get('/secrets', KEYS.management)).status).toBe(401);
    expect((await get('/secrets', '')).status).toBe(401);
    const internId = await createIntern(platform);
    const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', internId);
    expectRefused(await get('/secrets', key), 404, 'not_found');
    expectRefused(await get(`/interns/${internId}/secrets`, key), 404, 'not_found');
    expectRefused(await put(`/interns/${internId}/secrets/token`, { value: 'v', hosts: HOSTS }, key), 404, 'not_found');
    expectRefused(await get('/secrets', KEYS.outside), 404, 'not_found');
    expectRefused(await get('/secrets', KEYS.carolInactive), 403, 'forbidden');
  });

  it('takes OAuth tokens with `interns` only, and refuses writes while lifecycle writes are off (reads work)', async () => {
    expect((await get('/secrets', oauth.interns)).status).toBe(200);
    expectRefused(await get('/secrets', oauth.vaultOnly), 403, 'insufficient_scope');
    expect((await get('/secrets', KEYS.readonly)).status).toBe(200);
    const refused = await put('/secrets/token', { value: 'v', hosts: HOSTS }, KEYS.readonly);
    expect(refused.body).toEqual({
      error: { code: 503, message: "this organization's vault writes are disabled", metadata: { reason: 'vault_writes_disabled', retryable: false } },
    });
    expectRefused(await del('/secrets/token', KEYS.readonly), 503, 'vault_writes_disabled');
  });
});

describe("an intern's vault", () => {
  it('holds its own secrets, which another workspace cannot see, with fingerprints of its own vault', async () => {
    const internId = await createIntern(platform);
    const own = await put(`/interns/${internId}/secrets/github_token`, { value: VALUE, hosts: HOSTS });
    expect(own.status).toBe(200);
    const [workspaceSecret] = (await get('/secrets')).body.data;
    // One value, two vaults: two fingerprints.
    expect(own.body.data.fingerprint).not.toBe(workspaceSecret.fingerprint);
    expect((await get(`/interns/${internId}/secrets`)).body).toEqual({ data: [own.body.data], has_more: false });
    expectRefused(await get(`/interns/${internId}/secrets`, KEYS.aliceOther), 404, 'not_found');
    expectRefused(await get(`/interns/${randomUUID()}/secrets`), 404, 'not_found');
    expectRefused(await get('/interns/not-a-uuid/secrets'), 404, 'not_found');
    expect((await del(`/interns/${internId}/secrets/github_token`)).status).toBe(204);
  });

  it('copies workspace secrets in, values and hosts, replacing same names, all or none', async () => {
    const internId = await createIntern(platform);
    expect((await put('/secrets/copy_source', { value: VALUE, hosts: HOSTS })).status).toBe(200);
    expect((await put('/secrets/deploy_key', { value: `${VALUE}-deploy`, hosts: ['deploy.example.com'] })).status).toBe(200);
    const direct = await put(`/interns/${internId}/secrets/copy_source`, { value: VALUE, hosts: ['old.example.com'] });

    const missing = await copy(internId, ['copy_source', 'nothing_here']);
    expectRefused(missing, 404, 'not_found');
    expect(missing.body.error.message).toBe('workspace secret nothing_here not found; nothing was copied');
    expect((await get(`/interns/${internId}/secrets`)).body.data).toEqual([direct.body.data]);

    const copied = await copy(internId, ['copy_source', 'deploy_key']);
    expect(copied.status).toBe(200);
    expect(copied.body.data.map((secret: { name: string; hosts: string[] }) => [secret.name, secret.hosts])).toEqual([
      ['copy_source', HOSTS],
      ['deploy_key', ['deploy.example.com']],
    ]);
    // The intern vault's fingerprint of the value: what a direct write of it there gave.
    expect(copied.body.data[0].fingerprint).toBe(direct.body.data.fingerprint);
    expect(copied.text).not.toContain(VALUE);
    expect((await get(`/interns/${internId}/secrets`)).body.data).toEqual([copied.body.data[0], copied.body.data[1]].sort((a, b) => a.name.localeCompare(b.name)));
    expectRefused(await copy(internId, ['copy_source', 'copy_source']), 400, 'invalid_body');
    expectRefused(await copy(internId, []), 400, 'invalid_body');
    expectRefused(await copy(internId, ['Bad']), 400, 'invalid_body');
    expectRefused(await copy(internId, ['copy_source'], KEYS.aliceOther), 404, 'not_found');
    for (const name of ['copy_source', 'deploy_key']) expect((await del(`/secrets/${name}`)).status).toBe(204);
  });

  it('is destroyed with its intern', async () => {
    const internId = await createIntern(platform);
    const intern = (await platform.api(`${API}/interns/${internId}`, { token: KEYS.alice })).body;
    expect((await put(`/interns/${internId}/secrets/doomed`, { value: VALUE, hosts: HOSTS })).status).toBe(200);
    expect((await platform.api(`${API}/interns/${internId}`, { method: 'DELETE', token: KEYS.alice })).status).toBe(202);
    await eventually(
      () => platform.api(`${API}/interns/${internId}`, { token: KEYS.alice }),
      (answer) => answer.status === 404,
      30_000,
    );
    const rows = await query(platform, 'SELECT name FROM lifecycle.vault_secrets WHERE vault_id = $1', [intern.vault_id]);
    expect(rows).toEqual([]);
  });
});

describe('the value stays sealed', () => {
  it('is in no stored row, no database dump and no log line, only sealed to the key lifecycle cannot open with', async () => {
    const [row] = await query<{ sealed: string }>(platform, `SELECT sealed FROM lifecycle.vault_secrets WHERE vault_id = $1 AND name = 'github_token'`, [WS_MAIN]);
    expect(row.sealed.split('.')).toHaveLength(5);
    const { stdout } = await promisify(execFile)('pg_dump', ['--data-only', platform.database.url], { maxBuffer: 256 * 1024 * 1024 });
    expect(stdout).toContain('github_token');
    expect(stdout).not.toContain(VALUE);
    for (const service of ['gateway', 'lifecycle', 'runs', 'analytics', 'webhooks'] as const) {
      expect({ service, leaked: platform.process(service).output().includes(VALUE) }).toEqual({ service, leaked: false });
    }
    // Only the master key (the egress proxy's; here the development pair) opens it.
    const opener = await VaultOpener.load({ masterKey: await readFile(join(platform.env.DATA_DIR, 'keys', VAULT_MASTER_KEY_FILE), 'utf8'), keysDir: '/nonexistent', nodeEnv: 'production' });
    expect(await opener.open(row.sealed, 'github_token')).toBe(VALUE);
  });

  it('records every write and delete in the vault audit: who, scope, name and fingerprint, never the value', async () => {
    const events = await query<{ type: string; data: Record<string, unknown> }>(
      platform,
      `SELECT type, data FROM lifecycle.events WHERE stream_id = $1 ORDER BY stream_version`,
      [`vault-audit-${WS_MAIN}`],
    );
    expect(events.length).toBeGreaterThanOrEqual(4);
    expect(events[0]).toEqual({
      type: 'VaultSecretWritten',
      data: expect.objectContaining({ scope: 'workspace', name: 'github_token', actor: 'member:alice', fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) }),
    });
    expect(events.some((event) => event.type === 'VaultSecretDeleted' && event.data.name === 'other_token')).toBe(true);
    expect(JSON.stringify(events)).not.toContain(VALUE);
  });
});
