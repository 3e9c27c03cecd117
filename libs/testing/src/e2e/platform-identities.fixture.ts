/** The organizations, members and keys every end-to-end test starts from (CONTRACT section 11 format). */
export const WS_MAIN = '11111111-1111-4111-8111-111111111111';
export const WS_OTHER = '22222222-2222-4222-8222-222222222222';
export const WS_OUTSIDE = '33333333-3333-4333-8333-333333333333';
export const WS_READONLY = '44444444-4444-4444-8444-444444444444';

export const KEYS = {
  alice: 'uk_alice_main',
  bob: 'uk_bob_main',
  aliceOther: 'uk_alice_other',
  carolInactive: 'uk_carol_inactive',
  org: 'ok_acme_main',
  management: 'mk_acme',
  disabled: 'uk_disabled',
  outside: 'uk_dave_outside',
  readonly: 'uk_erin_readonly',
} as const;

export const IDENTITIES = {
  organizations: [
    { id: 'acme', name: 'Acme', programme: true, lifecycle_writes: true },
    { id: 'outsiders', name: 'Outsiders', programme: false, lifecycle_writes: true },
    { id: 'frozen', name: 'Frozen', programme: true, lifecycle_writes: false },
  ],
  workspaces: [
    { id: WS_MAIN, organization_id: 'acme', name: 'main' },
    { id: WS_OTHER, organization_id: 'acme', name: 'other' },
    { id: WS_OUTSIDE, organization_id: 'outsiders', name: 'outside' },
    { id: WS_READONLY, organization_id: 'frozen', name: 'frozen' },
  ],
  members: [
    { id: 'alice', organization_id: 'acme', active: true },
    { id: 'bob', organization_id: 'acme', active: true },
    { id: 'carol', organization_id: 'acme', active: false },
    { id: 'dave', organization_id: 'outsiders', active: true },
    { id: 'erin', organization_id: 'frozen', active: true },
  ],
  api_keys: [
    { key: KEYS.alice, kind: 'user', organization_id: 'acme', workspace_id: WS_MAIN, member_id: 'alice' },
    { key: KEYS.bob, kind: 'user', organization_id: 'acme', workspace_id: WS_MAIN, member_id: 'bob' },
    { key: KEYS.aliceOther, kind: 'user', organization_id: 'acme', workspace_id: WS_OTHER, member_id: 'alice' },
    { key: KEYS.carolInactive, kind: 'user', organization_id: 'acme', workspace_id: WS_MAIN, member_id: 'carol' },
    { key: KEYS.org, kind: 'organization', organization_id: 'acme', workspace_id: WS_MAIN },
    { key: KEYS.management, kind: 'management', organization_id: 'acme' },
    { key: KEYS.disabled, kind: 'user', organization_id: 'acme', workspace_id: WS_MAIN, member_id: 'alice', disabled: true },
    { key: KEYS.outside, kind: 'user', organization_id: 'outsiders', workspace_id: WS_OUTSIDE, member_id: 'dave' },
    { key: KEYS.readonly, kind: 'user', organization_id: 'frozen', workspace_id: WS_READONLY, member_id: 'erin' },
  ],
};

export const INTERN_KEYS = [
  'id',
  'name',
  'description',
  'instructions',
  'model',
  'status',
  'last_failure_message',
  'progress',
  'hostname',
  'workspace_id',
  'vault_id',
  'attached_vault_id',
  'created_at',
  'updated_at',
].sort();

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
