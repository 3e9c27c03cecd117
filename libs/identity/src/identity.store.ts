import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { DomainError, isUuid } from '@interns/contracts';
import { hashApiKey } from './api-key-hash';
import { apiKeyPlaintext, parseIdentityFile } from './identity-file';
import { applyIdentityFile } from './identity-file.apply';
import type { ApplyResult } from './identity-file.apply';

export type { ApplyResult };

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

export const USER_KEY_PREFIX = 'uk_';

/** `uk_` followed by 32 base64url characters (24 random bytes): a user key minted by the platform (`admin quickstart`). */
export function generateUserKey(): string {
  return `${USER_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
}

/** Which of an organization, a workspace and a member are there already. */
export interface IdentityPresence {
  organization: boolean;
  workspace: boolean;
  member: boolean;
}

/** A working user key (never its plaintext: only the hash is stored). */
export interface UserKeyRow {
  id: string;
  createdAt: string;
}

/** Serialises concurrent applies, so the references checked are the ones still there at commit. */
const APPLY_LOCK = 'identity:apply';

interface OwnedRow {
  id: string;
  organization_id: string;
}

/** Writes the `identity` schema: the admin command's side of what the gateway's resolver reads. */
export class IdentityStore {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Upserts a whole identity file in one transaction: every reference is checked first (against the
   * file and the database), and any problem leaves the database untouched. Plaintext keys are hashed.
   * `beforeCommit` sees the result inside the transaction; if it throws, nothing is applied.
   */
  async apply(input: unknown, beforeCommit?: (result: ApplyResult) => Promise<void>): Promise<ApplyResult> {
    const file = parseIdentityFile(input);
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [APPLY_LOCK]);
      const result = await applyIdentityFile(manager, file);
      await beforeCommit?.(result);
      return result;
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

  /** Which of these rows exist. */
  async presence(ids: { organizationId: string; workspaceId: string; memberId: string }): Promise<IdentityPresence> {
    if (!isUuid(ids.workspaceId)) throw new DomainError('invalid_body', 'workspace id must be a uuid');
    const [row] = await this.dataSource.query<{ organization: boolean; workspace: boolean; member: boolean }[]>(
      `SELECT EXISTS (SELECT 1 FROM identity.organizations WHERE id = $1) AS organization,
              EXISTS (SELECT 1 FROM identity.workspaces WHERE id = $2) AS workspace,
              EXISTS (SELECT 1 FROM identity.members WHERE id = $3) AS member`,
      [ids.organizationId, ids.workspaceId, ids.memberId],
    );
    return { organization: row?.organization === true, workspace: row?.workspace === true, member: row?.member === true };
  }

  /** The member's user keys for the workspace that are not disabled, newest first. */
  async activeUserKeys(memberId: string, workspaceId: string): Promise<UserKeyRow[]> {
    if (!isUuid(workspaceId)) throw new DomainError('invalid_body', 'workspace id must be a uuid');
    const rows: { id: string; created_at: Date }[] = await this.dataSource.query(
      `SELECT id::text, created_at FROM identity.api_keys
        WHERE kind = 'user' AND member_id = $1 AND workspace_id = $2 AND NOT disabled
        ORDER BY created_at DESC, id`,
      [memberId, workspaceId],
    );
    return rows.map((row) => ({ id: row.id, createdAt: row.created_at.toISOString() }));
  }

  /**
   * Disables the member's other user keys for the workspace, keeping `keptKey` (a plaintext); answers how many. The
   * gateway stops accepting them within AUTH_CACHE_TTL_MS.
   */
  async disableOtherUserKeys(memberId: string, workspaceId: string, keptKey: string): Promise<number> {
    if (!isUuid(workspaceId)) throw new DomainError('invalid_body', 'workspace id must be a uuid');
    const rows: unknown[] = await this.dataSource.query(
      // Wrapped in a CTE: TypeORM answers a bare UPDATE with [rows, count] instead of rows.
      `WITH disabled AS (
         UPDATE identity.api_keys SET disabled = true
          WHERE kind = 'user' AND member_id = $1 AND workspace_id = $2 AND NOT disabled AND key_hash <> $3
          RETURNING id
       )
       SELECT id FROM disabled`,
      [memberId, workspaceId, hashApiKey(keptKey)],
    );
    return rows.length;
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
}
