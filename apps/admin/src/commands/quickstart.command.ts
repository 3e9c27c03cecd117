import type { PlatformConfig } from '@interns/contracts';
import { generateUserKey, type IdentityStore } from '@interns/identity';
import { type AdminTarget, describeTarget, TextReport } from '../admin-output';
import { applyIdentities, type DaemonTokenRevoker } from './apply.command';
import { parseFlags } from './command-args';

/**
 * The development identity `quickstart` makes: fixed ids, so running it again finds the same rows. The
 * organization is in the programme with lifecycle writes on, so its key may create and drive interns.
 */
export const QUICKSTART_IDENTITY = {
  organizationId: 'quickstart',
  organizationName: 'Quickstart (development)',
  workspaceId: '00000000-0000-4000-8000-000000000001',
  workspaceName: 'quickstart',
  memberId: 'quickstart-dev',
} as const;

export interface QuickstartOptions {
  /** Mint a new key even when one works, and disable the member's others. */
  newKey: boolean;
  json: boolean;
}

export function parseQuickstartArgs(args: string[]): QuickstartOptions {
  const { values } = parseFlags('quickstart', args, { 'new-key': { type: 'boolean' }, json: { type: 'boolean' } });
  return { newKey: values['new-key'] ?? false, json: values.json ?? false };
}

/** What quickstart did to the key: minted the first, minted one replacing the others, or left the working one. */
export type QuickstartKeyStatus = 'created' | 'replaced' | 'exists';

export interface QuickstartOutput extends AdminTarget {
  organization: { id: string; created: boolean };
  workspace: { id: string; created: boolean };
  member: { id: string; created: boolean };
  /** The plaintext, only when minted now: a stored key is a hash and cannot be shown again. */
  key: string | null;
  key_status: QuickstartKeyStatus;
  /** Earlier keys of the member disabled by `--new-key`. */
  disabled_keys: number;
  api_url: string;
  /** Commands to try next, the key in place (or `<key>` when it was not minted now). */
  try: string[];
}

/** The identity file quickstart applies (the `apply` shape), with the key when one is minted. */
function quickstartFile(key: string | null) {
  const { organizationId, organizationName, workspaceId, workspaceName, memberId } = QUICKSTART_IDENTITY;
  return {
    organizations: [{ id: organizationId, name: organizationName, programme: true, lifecycle_writes: true }],
    workspaces: [{ id: workspaceId, organization_id: organizationId, name: workspaceName }],
    members: [{ id: memberId, organization_id: organizationId, active: true }],
    api_keys: key === null ? [] : [{ key, kind: 'user', organization_id: organizationId, workspace_id: workspaceId, member_id: memberId }],
  };
}

/** The gateway `npm start` runs, as a client on this machine reaches it. */
export function localApiUrl(config: Pick<PlatformConfig, 'gatewayPort'>): string {
  return `http://localhost:${config.gatewayPort}/api/v1`;
}

const DEFAULT_API_URL = 'http://localhost:8080/api/v1';

/** Three commands of the `interns` client (an intern chats once it runs: created provisioned), then curl's create. */
function commandsToTry(apiUrl: string, key: string | null): string[] {
  const shown = key ?? '<key>';
  const api = apiUrl === DEFAULT_API_URL ? '' : ` --api ${apiUrl}`;
  return [
    `npm run interns -- login --key ${shown}${api}`,
    'npm run interns -- create demo --provision --wait',
    'npm run interns -- chat demo "hello"',
    `curl -s -X POST ${apiUrl}/interns -H "Authorization: Bearer ${shown}" -H 'Content-Type: application/json' -d '{"name":"demo","provision":true}'`,
  ];
}

/**
 * `quickstart [--new-key] [--json]`: creates, or finds, a development organization, workspace and member and a user
 * key, through the same apply as `apply <file>`. Only the first run (or `--new-key`) mints a key and prints it: a
 * stored key is a SHA-256 hash, so a rerun says the key exists and how to get a new one rather than minting keys
 * nobody asked for. `--new-key` mints one and disables the member's earlier keys, so one key works at a time.
 * Refused with NODE_ENV=production: a key printed on a terminal is for a development machine.
 */
export async function runQuickstart(
  options: QuickstartOptions,
  context: { config: PlatformConfig; target: AdminTarget },
  store: () => Promise<IdentityStore>,
  revokeDaemonTokens: DaemonTokenRevoker,
): Promise<QuickstartOutput | TextReport> {
  if (context.config.nodeEnv === 'production') {
    throw new Error('quickstart: refused with NODE_ENV=production: it makes a development identity and prints its key; load real identities with apply');
  }
  const identity = await store();
  const { organizationId, workspaceId, memberId } = QUICKSTART_IDENTITY;
  const before = await identity.presence({ organizationId, workspaceId, memberId });
  const working = before.workspace && before.member ? await identity.activeUserKeys(memberId, workspaceId) : [];
  const key = options.newKey || working.length === 0 ? generateUserKey() : null;
  await applyIdentities(quickstartFile(key), identity, revokeDaemonTokens);
  const disabled = key !== null && options.newKey ? await identity.disableOtherUserKeys(memberId, workspaceId, key) : 0;
  const apiUrl = localApiUrl(context.config);
  const output: QuickstartOutput = {
    ...context.target,
    organization: { id: organizationId, created: !before.organization },
    workspace: { id: workspaceId, created: !before.workspace },
    member: { id: memberId, created: !before.member },
    key,
    key_status: key === null ? 'exists' : working.length === 0 ? 'created' : 'replaced',
    disabled_keys: disabled,
    api_url: apiUrl,
    try: commandsToTry(apiUrl, key),
  };
  return options.json ? output : quickstartReport(output, working[0]?.createdAt ?? null);
}

function quickstartReport(output: QuickstartOutput, keptKeyCreatedAt: string | null): TextReport {
  const state = (created: boolean) => (created ? 'created' : 'already there');
  const keyState =
    output.key === null
      ? `one exists (made ${keptKeyCreatedAt ?? '?'}); not shown: stored only as a hash`
      : output.key_status === 'created'
        ? 'created: shown this once, keep it'
        : `replaces ${output.disabled_keys} earlier key(s), now disabled: shown this once, keep it`;
  const rows: [string, string, string][] = [
    ['organization', output.organization.id, state(output.organization.created)],
    ['workspace', output.workspace.id, state(output.workspace.created)],
    ['member', output.member.id, state(output.member.created)],
    ['user key', output.key ?? '-', keyState],
  ];
  const width = Math.max(...rows.map(([, value]) => value.length));
  const [login, create, chat, curl] = output.try;
  return new TextReport([
    `Quickstart on ${describeTarget(output)}:`,
    ...rows.map(([what, value, how]) => `  ${what.padEnd(12)}  ${value.padEnd(width)}  ${how}`),
    ...(output.key === null ? ['A new key (the current one stops working): npm run admin -- quickstart --new-key'] : []),
    '',
    `Try it, with npm start running (API ${output.api_url}):`,
    `  ${login}`,
    `  ${create}`,
    `  ${chat}`,
    `or with curl: ${curl}`,
  ]);
}
