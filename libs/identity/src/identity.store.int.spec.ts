import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, TestDatabase } from '@interns/testing';
import { hashApiKey } from './api-key-hash';
import { IDENTITY_SCHEMA } from './identity.schema';
import { IdentityStore } from './identity.store';
import { identityMigrations } from './migrations';

const WORKSPACE_A = '0b0b0b0b-0000-4000-8000-00000000000a';
const WORKSPACE_B = '0b0b0b0b-0000-4000-8000-00000000000b';

function baseFile() {
  return {
    organizations: [
      { id: 'org-a', name: 'Org A', programme: true, lifecycle_writes: true },
      { id: 'org-b', name: 'Org B', programme: false, lifecycle_writes: false, chatapp_install_required: true },
    ],
    workspaces: [
      { id: WORKSPACE_A, organization_id: 'org-a', name: 'A main' },
      { id: WORKSPACE_B, organization_id: 'org-b', name: 'B main' },
    ],
    members: [
      { id: 'alice', organization_id: 'org-a', active: true },
      { id: 'bob', organization_id: 'org-b', active: false },
    ],
    api_keys: [
      { key: 'store-spec-user-key', kind: 'user', organization_id: 'org-a', workspace_id: WORKSPACE_A, member_id: 'alice' },
      { key: 'store-spec-org-key', kind: 'organization', organization_id: 'org-a', workspace_id: WORKSPACE_A },
      { key: 'store-spec-mgmt-key', kind: 'management', organization_id: 'org-b', disabled: true },
    ],
  };
}

describe('IdentityStore', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: IdentityStore;

  const count = async (table: string): Promise<number> =>
    (await dataSource.query(`SELECT count(*)::int AS n FROM identity.${table}`))[0].n;
  const counts = async () => ({
    organizations: await count('organizations'),
    workspaces: await count('workspaces'),
    members: await count('members'),
    api_keys: await count('api_keys'),
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: IDENTITY_SCHEMA,
      migrations: identityMigrations,
      applicationName: 'identity.store.int.spec',
      migrate: true,
    });
    store = new IdentityStore(dataSource);
  });

  afterAll(async () => {
    await dataSource.destroy();
    await db.drop();
  });

  it('rolls back everything when one reference is bad', async () => {
    const file = baseFile();
    file.api_keys.push({ key: 'store-spec-bad', kind: 'user', organization_id: 'org-a', workspace_id: WORKSPACE_A, member_id: 'nobody' });
    await expect(store.apply(file)).rejects.toThrow('api_keys[3].member_id: member nobody does not exist');
    expect(await counts()).toEqual({ organizations: 0, workspaces: 0, members: 0, api_keys: 0 });
  });

  it('refuses references that cross organizations', async () => {
    const file = baseFile();
    file.api_keys.push({ key: 'store-spec-cross', kind: 'user', organization_id: 'org-a', workspace_id: WORKSPACE_A, member_id: 'bob' });
    await expect(store.apply(file)).rejects.toThrow('api_keys[3].member_id: member bob belongs to organization org-b, not org-a');
    const other = baseFile();
    other.api_keys.push({ key: 'store-spec-cross', kind: 'organization', organization_id: 'org-a', workspace_id: WORKSPACE_B });
    await expect(store.apply(other)).rejects.toThrow(`api_keys[3].workspace_id: workspace ${WORKSPACE_B} belongs to organization org-b`);
    expect(await count('organizations')).toBe(0);
  });

  it('rejects a malformed file with the offending path before touching the database', async () => {
    const base = baseFile();
    const [userKey, orgKey, mgmtKey] = base.api_keys;
    const withKeys = (...api_keys: object[]) => ({ ...base, api_keys });
    const [wsA, wsB] = base.workspaces;
    await expect(store.apply({ ...base, workspaces: [wsA, { ...wsB, id: 'not-a-uuid' }] })).rejects.toThrow(
      'workspaces[1].id: must be a uuid',
    );
    await expect(store.apply({ ...base, extra: 1 })).rejects.toThrow('unknown field "extra"');
    await expect(store.apply(withKeys({ ...userKey, member_id: undefined }, orgKey, mgmtKey))).rejects.toThrow(
      'api_keys[0].member_id: is required on user keys',
    );
    await expect(store.apply(withKeys(userKey, { ...orgKey, workspace_id: undefined }))).rejects.toThrow(
      'api_keys[1].workspace_id: is required on organization keys',
    );
    await expect(store.apply(withKeys(userKey, { ...orgKey, member_id: 'alice' }))).rejects.toThrow(
      'api_keys[1].member_id: is allowed on user keys only',
    );
    await expect(store.apply(withKeys(userKey, { ...orgKey, key: 'a.b.c' }))).rejects.toThrow(
      'api_keys[1].key: must not have three dot-separated parts',
    );
    await expect(store.apply(withKeys(userKey, userKey))).rejects.toThrow('api_keys[1].key: is a duplicate');
    await expect(store.apply([])).rejects.toThrow('the file must hold a JSON object');
    const badKind = withKeys(userKey, { ...orgKey, kind: 'intern' });
    await expect(store.apply(badKind)).rejects.toThrow(/^api_keys\[1\]\.kind: /);
    expect(await count('organizations')).toBe(0);
  });

  it('upserts everything, stores only hashes, and re-applying is a no-op', async () => {
    const first = await store.apply(baseFile());
    // New rows are not changes: an organization created outside the programme had no access to lose.
    expect(first).toEqual({
      organizations: 2,
      workspaces: 2,
      members: 2,
      api_keys: 3,
      deactivated_members: [],
      organizations_left_programme: [],
    });
    const before = await dataSource.query(
      'SELECT id, updated_at FROM identity.organizations ORDER BY id',
    );
    const keysBefore = await dataSource.query('SELECT id, key_hash FROM identity.api_keys ORDER BY id');

    await store.apply(baseFile());
    expect(await counts()).toEqual({ organizations: 2, workspaces: 2, members: 2, api_keys: 3 });
    expect(await dataSource.query('SELECT id, updated_at FROM identity.organizations ORDER BY id')).toEqual(before);
    expect(await dataSource.query('SELECT id, key_hash FROM identity.api_keys ORDER BY id')).toEqual(keysBefore);

    const dump = JSON.stringify(await dataSource.query('SELECT * FROM identity.api_keys'));
    for (const key of baseFile().api_keys) {
      expect(dump).not.toContain(key.key);
      expect(dump).toContain(hashApiKey(key.key));
    }
    const [org] = await dataSource.query("SELECT * FROM identity.organizations WHERE id = 'org-b'");
    expect(org).toMatchObject({ programme: false, lifecycle_writes: false, chatapp_install_required: true });
    const [mgmt] = await dataSource.query('SELECT * FROM identity.api_keys WHERE key_hash = $1', [hashApiKey('store-spec-mgmt-key')]);
    expect(mgmt).toMatchObject({ kind: 'management', disabled: true, workspace_id: null, member_id: null });
  });

  it('applies changes and references rows already in the database', async () => {
    const result = await store.apply({
      members: [{ id: 'alice', organization_id: 'org-a', active: false }],
      api_keys: [
        { key: 'store-spec-user-key', kind: 'user', organization_id: 'org-a', workspace_id: WORKSPACE_A, member_id: 'alice', disabled: true },
      ],
    });
    expect(result).toEqual({
      organizations: 0,
      workspaces: 0,
      members: 1,
      api_keys: 1,
      deactivated_members: ['alice'],
      organizations_left_programme: [],
    });
    const [alice] = await dataSource.query("SELECT active FROM identity.members WHERE id = 'alice'");
    expect(alice.active).toBe(false);
    const [key] = await dataSource.query('SELECT disabled FROM identity.api_keys WHERE key_hash = $1', [hashApiKey('store-spec-user-key')]);
    expect(key.disabled).toBe(true);
    await expect(
      store.apply({ workspaces: [{ id: WORKSPACE_A, organization_id: 'org-b', name: 'moved' }] }),
    ).rejects.toThrow(`workspaces[0].organization_id: workspace ${WORKSPACE_A} already belongs to organization org-a, not org-b`);
    await store.apply(baseFile());
  });

  it('reports organizations leaving the programme, and a failing beforeCommit applies nothing', async () => {
    const leaving = { organizations: [{ id: 'org-a', name: 'Org A', programme: false, lifecycle_writes: true }] };
    await expect(
      store.apply(leaving, async () => {
        throw new Error('lifecycle is down');
      }),
    ).rejects.toThrow('lifecycle is down');
    const [kept] = await dataSource.query("SELECT programme FROM identity.organizations WHERE id = 'org-a'");
    expect(kept.programme).toBe(true);
    const seen: string[][] = [];
    const result = await store.apply(leaving, async (r) => {
      seen.push(r.organizations_left_programme);
    });
    expect(result.organizations_left_programme).toEqual(['org-a']);
    expect(seen).toEqual([['org-a']]);
    expect((await store.apply(leaving)).organizations_left_programme).toEqual([]);
    await store.apply(baseFile());
  });

  it('creates intern keys, generated or given, and never stores their plaintext', async () => {
    const internId = randomUUID();
    const key = await store.createInternKey({ internId, organizationId: 'org-a', workspaceId: WORKSPACE_A });
    expect(key).toMatch(/^ik_[A-Za-z0-9_-]{32}$/);
    const [row] = await dataSource.query('SELECT * FROM identity.api_keys WHERE key_hash = $1', [hashApiKey(key)]);
    expect(row).toMatchObject({ kind: 'intern', intern_id: internId, organization_id: 'org-a', workspace_id: WORKSPACE_A, member_id: null });
    expect(JSON.stringify(row)).not.toContain(key);

    const given = await store.createInternKey({ internId, organizationId: 'org-a', workspaceId: WORKSPACE_A, key: 'ik_given_plaintext' });
    expect(given).toBe('ik_given_plaintext');
    // Same key for the same intern again: accepted as a no-op.
    await store.createInternKey({ internId, organizationId: 'org-a', workspaceId: WORKSPACE_A, key: 'ik_given_plaintext' });
    await expect(
      store.createInternKey({ internId: randomUUID(), organizationId: 'org-a', workspaceId: WORKSPACE_A, key: 'ik_given_plaintext' }),
    ).rejects.toThrow('key is already in use by another credential');
    await expect(
      store.createInternKey({ internId, organizationId: 'org-a', workspaceId: WORKSPACE_A, key: 'store-spec-org-key' }),
    ).rejects.toThrow('key is already in use by another credential');
    await expect(
      store.createInternKey({ internId, organizationId: 'org-b', workspaceId: WORKSPACE_A }),
    ).rejects.toThrow(`workspace ${WORKSPACE_A} belongs to organization org-a, not org-b`);
    await expect(
      store.createInternKey({ internId, organizationId: 'org-a', workspaceId: randomUUID() }),
    ).rejects.toThrow(/^workspace .* not found$/);
    // An apply may not turn an intern key into another kind.
    await expect(
      store.apply({ api_keys: [{ key: 'ik_given_plaintext', kind: 'organization', organization_id: 'org-a', workspace_id: WORKSPACE_A }] }),
    ).rejects.toThrow('api_keys[0].key: is already in use by an intern key');
  });

  it('records a chat-app install once and refuses unknown workspaces', async () => {
    const first = await store.recordChatappInstall(WORKSPACE_A);
    const again = await store.recordChatappInstall(WORKSPACE_A.toUpperCase());
    expect(first.workspaceId).toBe(WORKSPACE_A);
    expect(again.chatappInstalledAt).toBe(first.chatappInstalledAt);
    await expect(store.recordChatappInstall(randomUUID())).rejects.toThrow(/^workspace .* not found$/);
    await expect(store.recordChatappInstall('nope')).rejects.toThrow('workspace id must be a uuid');
  });

  it('checks that a member belongs to the workspace organization', async () => {
    await expect(store.requireMemberOfWorkspace('alice', WORKSPACE_A)).resolves.toEqual({ organizationId: 'org-a' });
    await expect(store.requireMemberOfWorkspace('bob', WORKSPACE_A)).rejects.toThrow(
      `member bob belongs to organization org-b, not to org-a of workspace ${WORKSPACE_A}`,
    );
    await expect(store.requireMemberOfWorkspace('nobody', WORKSPACE_A)).rejects.toThrow('member nobody not found');
  });

  it('serialises concurrent applies of the same file', async () => {
    const results = await Promise.all([store.apply(baseFile()), store.apply(baseFile()), store.apply(baseFile())]);
    expect(results).toHaveLength(3);
    expect(await count('organizations')).toBe(2);
  });
});
