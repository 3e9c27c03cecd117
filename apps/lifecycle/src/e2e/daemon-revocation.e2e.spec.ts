/**
 * End to end: an `admin apply` that deactivates a member or takes an organization out of the programme
 * revokes their daemon tokens in lifecycle (checked as a runtime would, over NATS); other tokens keep working.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { DaemonTokenCheckReply, subjectsFor } from '@interns/contracts';
import { connectNats, RpcClient } from '@interns/messaging';
import { Platform } from '@interns/testing';
import { API, createRunningIntern, IDENTITIES, KEYS, WS_MAIN } from '@interns/testing/e2e';

const WS_LEAVING = '55555555-5555-4555-8555-555555555555';
const ZOE_KEY = 'uk_zoe_leaving';
const LEAVING_ORG = { id: 'leaving', name: 'Leaving', programme: true, lifecycle_writes: true };
const WITH_LEAVING = {
  organizations: [...IDENTITIES.organizations, LEAVING_ORG],
  workspaces: [...IDENTITIES.workspaces, { id: WS_LEAVING, organization_id: 'leaving', name: 'leaving' }],
  members: [...IDENTITIES.members, { id: 'zoe', organization_id: 'leaving', active: true }],
  api_keys: [
    ...IDENTITIES.api_keys,
    { key: ZOE_KEY, kind: 'user', organization_id: 'leaving', workspace_id: WS_LEAVING, member_id: 'zoe' },
  ],
};

let platform: Platform;
let nc: NatsConnection;
let dir: string;

async function revealedToken(member: string, workspace: string, apiKey: string): Promise<string> {
  const internId = await createRunningIntern(platform, apiKey);
  const { access_token: oauth } = await platform.admin<{ access_token: string }>(
    'oauth-token', '--member', member, '--workspace', workspace, '--scope', 'interns vault:read',
  );
  const revealed = await platform.api(`${API}/interns/${internId}/daemon`, { token: oauth });
  if (revealed.status !== 200) throw new Error(`reveal answered ${revealed.status}: ${revealed.text}`);
  return revealed.body.token as string;
}

function checkToken(token: string): Promise<DaemonTokenCheckReply> {
  return new RpcClient(nc).request(subjectsFor(platform.env.NATS_PREFIX as string).lifecycle.daemonTokenCheck, { token }, {
    timeoutMs: 10_000,
  });
}

async function apply(file: unknown): Promise<{ revoked_daemon_tokens: number }> {
  const path = join(dir, `identities-${Date.now()}-${Math.random()}.json`);
  await writeFile(path, JSON.stringify(file));
  return platform.admin('apply', path);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'daemon-revocation-'));
  platform = await Platform.start();
  await platform.applyIdentities(WITH_LEAVING);
  nc = await connectNats({ url: platform.env.NATS_URL as string, name: 'daemon-revocation-e2e' });
}, 150_000);

afterAll(async () => {
  await nc?.close();
  await platform?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('deactivating a member revokes their daemon tokens and no one else’s', async () => {
  const alice = await revealedToken('alice', WS_MAIN, KEYS.alice);
  const bob = await revealedToken('bob', WS_MAIN, KEYS.bob);
  expect(await checkToken(alice)).toMatchObject({ valid: true, memberId: 'alice' });

  const members = WITH_LEAVING.members.map((m) => (m.id === 'alice' ? { ...m, active: false } : m));
  const result = await apply({ ...WITH_LEAVING, members });
  expect(result).toMatchObject({ deactivated_members: ['alice'], organizations_left_programme: [], revoked_daemon_tokens: 1 });

  expect(await checkToken(alice)).toEqual({ valid: false, internId: null, memberId: null, expiresAt: null });
  expect(await checkToken(bob)).toMatchObject({ valid: true, memberId: 'bob' });
  // Applying the same file again changes nothing and revokes nothing.
  expect(await apply({ ...WITH_LEAVING, members })).toMatchObject({ deactivated_members: [], revoked_daemon_tokens: 0 });
}, 90_000);

it('an organization leaving the programme revokes the daemon tokens of its interns', async () => {
  const zoe = await revealedToken('zoe', WS_LEAVING, ZOE_KEY);
  const bob = await revealedToken('bob', WS_MAIN, KEYS.bob);
  expect(await checkToken(zoe)).toMatchObject({ valid: true, memberId: 'zoe' });

  const organizations = WITH_LEAVING.organizations.map((o) => (o.id === 'leaving' ? { ...o, programme: false } : o));
  const result = await apply({ ...WITH_LEAVING, organizations });
  expect(result).toMatchObject({ organizations_left_programme: ['leaving'], revoked_daemon_tokens: 1 });

  expect((await checkToken(zoe)).valid).toBe(false);
  expect(await checkToken(bob)).toMatchObject({ valid: true, memberId: 'bob' });
}, 90_000);
