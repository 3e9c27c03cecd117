import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { DomainError, isUuid } from '@interns/contracts';
import { hashApiKey } from './api-key-hash';
import { apiKeyPlaintext, IdentityFile, invalidFile, parseIdentityFile } from './identity-file';

export interface ApplyResult {
  organizations: number;
  workspaces: number;
  members: number;
  api_keys: number;
}

export interface CreateInternKeyInput {
  internId: string;
  organizationId: string;
  workspaceId: string;
  /** The plaintext to register; a fresh `ik_...` key is generated when absent. */
  key?: string;
}

export interface ChatappInstall {
  workspaceId: string;
  chatappInstalledAt: string;
}

export const INTERN_KEY_PREFIX = 'ik_';

/** `ik_` followed by 32 base64url characters (24 random bytes). */
export function generateInternKey(): string {
  return `${INTERN_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
}

/** Serialises concurrent applies, so the references checked are the ones still there at commit. */
const APPLY_LOCK = 'identity:apply';

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

/** Writes the `identity` schema: the admin command's side of what the gateway's resolver reads. */
export class IdentityStore {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Upserts a whole identity file in one transaction: every reference is checked first (against the
   * file and the database), and any problem leaves the database untouched. Plaintext keys are hashed.
   */
  async apply(input: unknown): Promise<ApplyResult> {
    const file = parseIdentityFile(input);
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [APPLY_LOCK]);
      const existing = await this.loadExisting(manager, file);
      checkReferences(file, existing);
      await upsertOrganizations(manager, file);
      await upsertWorkspaces(manager, file);
      await upsertMembers(manager, file);
      await upsertApiKeys(manager, file);
      return {
        organizations: file.organizations.length,
        workspaces: file.workspaces.length,
        members: file.members.length,
        api_keys: file.api_keys.length,
      };
    });
  }

  /** Registers an intern key and returns its plaintext (the only time it is ever seen). */
  async createInternKey(input: CreateInternKeyInput): Promise<string> {
    if (!isUuid(input.internId)) throw new DomainError('invalid_body', 'intern id must be a uuid');
    if (!isUuid(input.workspaceId)) throw new DomainError('invalid_body', 'workspace id must be a uuid');
    let key = generateInternKey();
    if (input.key !== undefined) {
      const parsed = apiKeyPlaintext.safeParse(input.key);
      if (!parsed.success) throw new DomainError('invalid_body', `key ${parsed.error.issues[0]?.message ?? 'is invalid'}`);
      key = parsed.data;
    }
    const keyHash = hashApiKey(key);
    return this.dataSource.transaction(async (manager) => {
      const workspace = await this.workspaceOwner(manager, input.workspaceId);
      if (workspace.organization_id !== input.organizationId) {
        throw new DomainError(
          'invalid_body',
          `workspace ${input.workspaceId} belongs to organization ${workspace.organization_id}, not ${input.organizationId}`,
        );
      }
      const inserted: unknown[] = await manager.query(
        `INSERT INTO identity.api_keys (key_hash, kind, organization_id, workspace_id, intern_id)
         VALUES ($1, 'intern', $2, $3, $4)
         ON CONFLICT (key_hash) DO NOTHING
         RETURNING id`,
        [keyHash, input.organizationId, input.workspaceId, input.internId],
      );
      if (inserted.length === 1) return key;
      // Registering the same key for the same intern again is a no-op; any other reuse is refused.
      const rows: { kind: string; intern_id: string | null; workspace_id: string | null }[] = await manager.query(
        'SELECT kind, intern_id::text, workspace_id::text FROM identity.api_keys WHERE key_hash = $1',
        [keyHash],
      );
      const row = rows[0];
      const same =
        row?.kind === 'intern' &&
        row.intern_id === input.internId.toLowerCase() &&
        row.workspace_id === input.workspaceId.toLowerCase();
      if (!same) throw new DomainError('invalid_body', 'key is already in use by another credential');
      return key;
    });
  }

  /** Marks the workspace's chat app as installed; the first install time is kept. */
  async recordChatappInstall(workspaceId: string): Promise<ChatappInstall> {
    if (!isUuid(workspaceId)) throw new DomainError('invalid_body', 'workspace id must be a uuid');
    const rows: { id: string; chatapp_installed_at: Date }[] = await this.dataSource.query(
      // Wrapped in a CTE: TypeORM answers a bare UPDATE with [rows, count] instead of rows.
      `WITH installed AS (
         UPDATE identity.workspaces SET chatapp_installed_at = COALESCE(chatapp_installed_at, now())
          WHERE id = $1
          RETURNING id::text, chatapp_installed_at
       )
       SELECT * FROM installed`,
      [workspaceId],
    );
    const row = rows[0];
    if (!row) throw new DomainError('not_found', `workspace ${workspaceId} not found`);
    return { workspaceId: row.id, chatappInstalledAt: row.chatapp_installed_at.toISOString() };
  }

  /** The organization a member acts in when using the workspace; refuses members of other organizations. */
  async requireMemberOfWorkspace(memberId: string, workspaceId: string): Promise<{ organizationId: string }> {
    if (!isUuid(workspaceId)) throw new DomainError('invalid_body', 'workspace id must be a uuid');
    const workspace = await this.workspaceOwner(this.dataSource.manager, workspaceId);
    const members: OwnedRow[] = await this.dataSource.query(
      'SELECT id, organization_id FROM identity.members WHERE id = $1',
      [memberId],
    );
    const member = members[0];
    if (!member) throw new DomainError('not_found', `member ${memberId} not found`);
    if (member.organization_id !== workspace.organization_id) {
      throw new DomainError(
        'invalid_body',
        `member ${memberId} belongs to organization ${member.organization_id}, ` +
          `not to ${workspace.organization_id} of workspace ${workspaceId}`,
      );
    }
    return { organizationId: workspace.organization_id };
  }

  private async workspaceOwner(manager: EntityManager, workspaceId: string): Promise<OwnedRow> {
    const rows: OwnedRow[] = await manager.query(
      'SELECT id::text, organization_id FROM identity.workspaces WHERE id = $1',
      [workspaceId],
    );
    const row = rows[0];
    if (!row) throw new DomainError('not_found', `workspace ${workspaceId} not found`);
    return row;
  }

  private async loadExisting(manager: EntityManager, file: IdentityFile): Promise<ExistingRows> {
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

async function upsertOrganizations(manager: EntityManager, file: IdentityFile): Promise<void> {
  if (file.organizations.length === 0) return;
  const rows = file.organizations;
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

async function upsertMembers(manager: EntityManager, file: IdentityFile): Promise<void> {
  if (file.members.length === 0) return;
  const rows = file.members;
  await manager.query(
    `INSERT INTO identity.members AS m (id, organization_id, active)
     SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[])
     ON CONFLICT (id) DO UPDATE SET active = EXCLUDED.active
     WHERE m.active IS DISTINCT FROM EXCLUDED.active`,
    [rows.map((m) => m.id), rows.map((m) => m.organization_id), rows.map((m) => m.active)],
  );
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
