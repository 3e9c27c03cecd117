/** Organizations, workspaces, members and keys covering every branch of CONTRACT section 1's checks. */
export const WORKSPACE_MAIN = '0a0a0a0a-0000-4000-8000-000000000001';
export const WORKSPACE_OUTSIDE = '0a0a0a0a-0000-4000-8000-000000000002';
export const WORKSPACE_READ_ONLY = '0a0a0a0a-0000-4000-8000-000000000003';

export const KEYS = {
  user: 'gw-spec-user-key',
  userInactive: 'gw-spec-user-inactive-key',
  organization: 'gw-spec-org-key',
  management: 'gw-spec-management-key',
  disabled: 'gw-spec-disabled-key',
  outsideProgramme: 'gw-spec-outside-programme-key',
  readOnly: 'gw-spec-read-only-key',
} as const;

export const MEMBERS = { active: 'ada', inactive: 'ivan', outside: 'otto', readOnly: 'rita' } as const;

export const ORGANIZATIONS = { main: 'org-main', outside: 'org-outside', readOnly: 'org-read-only' } as const;

export function identityFile() {
  return {
    organizations: [
      { id: ORGANIZATIONS.main, name: 'Main', programme: true, lifecycle_writes: true },
      { id: ORGANIZATIONS.outside, name: 'Outside the programme', programme: false, lifecycle_writes: true },
      { id: ORGANIZATIONS.readOnly, name: 'Writes disabled', programme: true, lifecycle_writes: false },
    ],
    workspaces: [
      { id: WORKSPACE_MAIN, organization_id: ORGANIZATIONS.main, name: 'main' },
      { id: WORKSPACE_OUTSIDE, organization_id: ORGANIZATIONS.outside, name: 'outside' },
      { id: WORKSPACE_READ_ONLY, organization_id: ORGANIZATIONS.readOnly, name: 'read only' },
    ],
    members: [
      { id: MEMBERS.active, organization_id: ORGANIZATIONS.main, active: true },
      { id: MEMBERS.inactive, organization_id: ORGANIZATIONS.main, active: false },
      { id: MEMBERS.outside, organization_id: ORGANIZATIONS.outside, active: true },
      { id: MEMBERS.readOnly, organization_id: ORGANIZATIONS.readOnly, active: true },
    ],
    api_keys: [
      { key: KEYS.user, kind: 'user', organization_id: ORGANIZATIONS.main, workspace_id: WORKSPACE_MAIN, member_id: MEMBERS.active },
      { key: KEYS.userInactive, kind: 'user', organization_id: ORGANIZATIONS.main, workspace_id: WORKSPACE_MAIN, member_id: MEMBERS.inactive },
      { key: KEYS.organization, kind: 'organization', organization_id: ORGANIZATIONS.main, workspace_id: WORKSPACE_MAIN },
      { key: KEYS.management, kind: 'management', organization_id: ORGANIZATIONS.main },
      { key: KEYS.disabled, kind: 'user', organization_id: ORGANIZATIONS.main, workspace_id: WORKSPACE_MAIN, member_id: MEMBERS.active, disabled: true },
      { key: KEYS.outsideProgramme, kind: 'user', organization_id: ORGANIZATIONS.outside, workspace_id: WORKSPACE_OUTSIDE, member_id: MEMBERS.outside },
      { key: KEYS.readOnly, kind: 'user', organization_id: ORGANIZATIONS.readOnly, workspace_id: WORKSPACE_READ_ONLY, member_id: MEMBERS.readOnly },
    ],
  };
}

export const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });
