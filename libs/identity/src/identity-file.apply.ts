/**
 * `admin apply`'s write: an identity file checked against the rows already in the `identity` schema, then
 * upserted table by table (IdentityStore.apply runs it in one locked transaction).
 */
import type { EntityManager } from 'typeorm';
import { hashApiKey } from './api-key-hash';
import { IdentityFile, invalidFile } from './identity-file';

export interface ApplyResult {
  organizations: number;
  workspaces: number;
  members: number;
  api_keys: number;
  /** Existing members this apply turned inactive (new inactive members never had access to lose). */
  deactivated_members: string[];
  /** Existing organizations this apply took out of the programme. */
  organizations_left_programme: string[];
}

interface OwnedRow {
  id: string;
  organization_id: string;
}

/** What the rows already in the database say about the ids a file mentions. */
interface ExistingRows {
  organizations: Set<string>;
  workspaces: Map<string, string>;
  members: Map<string, string>;
  internKeyHashes: Set<string>;
}

/**
 * Checks every reference of the file (against the file and the rows already there), then upserts it; inside
 * the caller's transaction, so any problem leaves the database untouched. Plaintext keys are hashed.
 */
export async function applyIdentityFile(manager: EntityManager, file: IdentityFile): Promise<ApplyResult> {
  const existing = await loadExisting(manager, file);
  checkReferences(file, existing);
  const organizationsLeftProgramme = await upsertOrganizations(manager, file);
  await upsertWorkspaces(manager, file);
  const deactivatedMembers = await upsertMembers(manager, file);
  await upsertApiKeys(manager, file);
  return {
    organizations: file.organizations.length,
    workspaces: file.workspaces.length,
    members: file.members.length,
    api_keys: file.api_keys.length,
    deactivated_members: deactivatedMembers,
    organizations_left_programme: organizationsLeftProgramme,
  };
}

async function loadExisting(manager: EntityManager, file: IdentityFile): Promise<ExistingRows> {
  const organizationIds = unique([
    ...file.workspaces.map((w) => w.organization_id),
    ...file.members.map((m) => m.organization_id),
    ...file.api_keys.map((k) => k.organization_id),
  ]);
  const workspaceIds = unique([
    ...file.workspaces.map((w) => w.id),
    ...file.api_keys.flatMap((k) => (k.workspace_id ? [k.workspace_id] : [])),
  ]);
  const memberIds = unique([
    ...file.members.map((m) => m.id),
    ...file.api_keys.flatMap((k) => (k.member_id ? [k.member_id] : [])),
  ]);
  const organizations: { id: string }[] = await manager.query(
    'SELECT id FROM identity.organizations WHERE id = ANY($1::text[])',
    [organizationIds],
  );
  const workspaces: OwnedRow[] = await manager.query(
    'SELECT id::text, organization_id FROM identity.workspaces WHERE id = ANY($1::uuid[])',
    [workspaceIds],
  );
  const members: OwnedRow[] = await manager.query(
    'SELECT id, organization_id FROM identity.members WHERE id = ANY($1::text[])',
    [memberIds],
  );
  const internKeys: { key_hash: string }[] = await manager.query(
    "SELECT key_hash FROM identity.api_keys WHERE key_hash = ANY($1::text[]) AND kind = 'intern'",
    [file.api_keys.map((k) => hashApiKey(k.key))],
  );
  return {
    organizations: new Set(organizations.map((o) => o.id)),
    workspaces: new Map(workspaces.map((w) => [w.id, w.organization_id])),
    members: new Map(members.map((m) => [m.id, m.organization_id])),
    internKeyHashes: new Set(internKeys.map((k) => k.key_hash)),
  };
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** Every reference must resolve (in the file or the database) and stay inside one organization. */
function checkReferences(file: IdentityFile, existing: ExistingRows): void {
  const organizations = new Set([...existing.organizations, ...file.organizations.map((o) => o.id)]);
  const workspaces = new Map(existing.workspaces);
  const members = new Map(existing.members);

  const requireOrganization = (path: PropertyKey[], organizationId: string) => {
    if (!organizations.has(organizationId)) throw invalidFile(path, `organization ${organizationId} does not exist`);
  };
  // Moving a workspace or member to another organization would silently re-home every key bound to it.
  const requireSameOwner = (path: PropertyKey[], what: string, id: string, owner: string | undefined, organizationId: string) => {
    if (owner !== undefined && owner !== organizationId) {
      throw invalidFile(path, `${what} ${id} already belongs to organization ${owner}, not ${organizationId}`);
    }
  };

  file.workspaces.forEach((workspace, index) => {
    requireOrganization(['workspaces', index, 'organization_id'], workspace.organization_id);
    requireSameOwner(['workspaces', index, 'organization_id'], 'workspace', workspace.id, existing.workspaces.get(workspace.id), workspace.organization_id);
    workspaces.set(workspace.id, workspace.organization_id);
  });
  file.members.forEach((member, index) => {
    requireOrganization(['members', index, 'organization_id'], member.organization_id);
    requireSameOwner(['members', index, 'organization_id'], 'member', member.id, existing.members.get(member.id), member.organization_id);
    members.set(member.id, member.organization_id);
  });
  file.api_keys.forEach((key, index) => {
    requireOrganization(['api_keys', index, 'organization_id'], key.organization_id);
    if (key.workspace_id !== undefined) {
      const owner = workspaces.get(key.workspace_id);
      if (owner === undefined) throw invalidFile(['api_keys', index, 'workspace_id'], `workspace ${key.workspace_id} does not exist`);
      if (owner !== key.organization_id) {
        throw invalidFile(['api_keys', index, 'workspace_id'], `workspace ${key.workspace_id} belongs to organization ${owner}, not ${key.organization_id}`);
      }
    }
    if (key.member_id !== undefined) {
      const owner = members.get(key.member_id);
      if (owner === undefined) throw invalidFile(['api_keys', index, 'member_id'], `member ${key.member_id} does not exist`);
      if (owner !== key.organization_id) {
        throw invalidFile(['api_keys', index, 'member_id'], `member ${key.member_id} belongs to organization ${owner}, not ${key.organization_id}`);
      }
    }
    if (existing.internKeyHashes.has(hashApiKey(key.key))) {
      throw invalidFile(['api_keys', index, 'key'], 'is already in use by an intern key');
    }
  });
}

// Each upsert is one statement over parallel arrays; rows whose values did not change are left alone,
// so re-applying a file is a no-op (updated_at included).

/** Returns the existing organizations whose `programme` went from true to false. */
async function upsertOrganizations(manager: EntityManager, file: IdentityFile): Promise<string[]> {
  if (file.organizations.length === 0) return [];
  const rows = file.organizations;
  const before = await organizationsInProgramme(manager, rows.map((o) => o.id));
  await manager.query(
    `INSERT INTO identity.organizations AS o (id, name, programme, lifecycle_writes, chatapp_install_required)
     SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::boolean[], $5::boolean[])
     ON CONFLICT (id) DO UPDATE SET
       name = EXCLUDED.name,
       programme = EXCLUDED.programme,
       lifecycle_writes = EXCLUDED.lifecycle_writes,
       chatapp_install_required = EXCLUDED.chatapp_install_required,
       updated_at = now()
     WHERE (o.name, o.programme, o.lifecycle_writes, o.chatapp_install_required)
       IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.programme, EXCLUDED.lifecycle_writes, EXCLUDED.chatapp_install_required)`,
    [
      rows.map((o) => o.id),
      rows.map((o) => o.name),
      rows.map((o) => o.programme),
      rows.map((o) => o.lifecycle_writes),
      rows.map((o) => o.chatapp_install_required ?? false),
    ],
  );
  return rows.filter((o) => !o.programme && before.has(o.id)).map((o) => o.id);
}

async function organizationsInProgramme(manager: EntityManager, ids: string[]): Promise<Set<string>> {
  const rows: { id: string }[] = await manager.query(
    'SELECT id FROM identity.organizations WHERE id = ANY($1::text[]) AND programme',
    [ids],
  );
  return new Set(rows.map((r) => r.id));
}

async function upsertWorkspaces(manager: EntityManager, file: IdentityFile): Promise<void> {
  if (file.workspaces.length === 0) return;
  const rows = file.workspaces;
  await manager.query(
    `INSERT INTO identity.workspaces AS w (id, organization_id, name)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name
     WHERE w.name IS DISTINCT FROM EXCLUDED.name`,
    [rows.map((w) => w.id), rows.map((w) => w.organization_id), rows.map((w) => w.name)],
  );
}

/** Returns the existing members whose `active` went from true to false. */
async function upsertMembers(manager: EntityManager, file: IdentityFile): Promise<string[]> {
  if (file.members.length === 0) return [];
  const rows = file.members;
  const active: { id: string }[] = await manager.query(
    'SELECT id FROM identity.members WHERE id = ANY($1::text[]) AND active',
    [rows.map((m) => m.id)],
  );
  const wasActive = new Set(active.map((m) => m.id));
  await manager.query(
    `INSERT INTO identity.members AS m (id, organization_id, active)
     SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[])
     ON CONFLICT (id) DO UPDATE SET active = EXCLUDED.active
     WHERE m.active IS DISTINCT FROM EXCLUDED.active`,
    [rows.map((m) => m.id), rows.map((m) => m.organization_id), rows.map((m) => m.active)],
  );
  return rows.filter((m) => !m.active && wasActive.has(m.id)).map((m) => m.id);
}

async function upsertApiKeys(manager: EntityManager, file: IdentityFile): Promise<void> {
  if (file.api_keys.length === 0) return;
  const rows = file.api_keys;
  await manager.query(
    `INSERT INTO identity.api_keys AS k (key_hash, kind, organization_id, workspace_id, member_id, disabled)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::text[], $6::boolean[])
     ON CONFLICT (key_hash) DO UPDATE SET
       kind = EXCLUDED.kind,
       organization_id = EXCLUDED.organization_id,
       workspace_id = EXCLUDED.workspace_id,
       member_id = EXCLUDED.member_id,
       disabled = EXCLUDED.disabled
     WHERE (k.kind, k.organization_id, k.workspace_id, k.member_id, k.disabled)
       IS DISTINCT FROM (EXCLUDED.kind, EXCLUDED.organization_id, EXCLUDED.workspace_id, EXCLUDED.member_id, EXCLUDED.disabled)`,
    [
      rows.map((k) => hashApiKey(k.key)),
      rows.map((k) => k.kind),
      rows.map((k) => k.organization_id),
      rows.map((k) => k.workspace_id ?? null),
      rows.map((k) => k.member_id ?? null),
      rows.map((k) => k.disabled ?? false),
    ],
  );
}
