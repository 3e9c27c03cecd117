/** The organization, member and keys the console's browser suite signs in with (CONTRACT section 11's format). */
export const WORKSPACE = '51515151-5151-4151-8151-515151515151';

export const CONSOLE_KEYS = {
  user: 'uk_console_ada',
  management: 'mk_console_acme',
} as const;

export const CONSOLE_IDENTITIES = {
  organizations: [{ id: 'console-org', name: 'Console Org', programme: true, lifecycle_writes: true }],
  workspaces: [{ id: WORKSPACE, organization_id: 'console-org', name: 'console' }],
  members: [{ id: 'ada', organization_id: 'console-org', active: true }],
  api_keys: [
    { key: CONSOLE_KEYS.user, kind: 'user', organization_id: 'console-org', workspace_id: WORKSPACE, member_id: 'ada' },
    { key: CONSOLE_KEYS.management, kind: 'management', organization_id: 'console-org' },
  ],
};
