import { createHmac } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { callerId, DomainError, isUuid } from '@interns/contracts';
import type {
  EgressContextReply,
  EgressContextRequest,
  EgressContextSecret,
  RequestContext,
  VaultCopyRequest,
  VaultDeleteRequest,
  VaultListRequest,
  VaultPutRequest,
  VaultScope,
  VaultSecret,
  VaultSecretList,
} from '@interns/contracts';
import { CommandHandler, type Decider, eventMetadata, type PostgresEventStore } from '@interns/event-store';
import type { VaultSealer } from '@interns/vault';
import { visibleInternRow } from '../interns/visible-intern';

/** The audit of a vault's writes (interface section 18): one stream per vault, in lifecycle's event store. */
export const VAULT_AUDIT_STREAM_TYPE = 'vault-audit';
export const vaultAuditStreamId = (vaultId: string): string => `vault-audit-${vaultId}`;
export const VAULT_AUDIT_EVENT_TYPES = { written: 'VaultSecretWritten', deleted: 'VaultSecretDeleted' } as const;
type VaultAuditEventType = (typeof VAULT_AUDIT_EVENT_TYPES)[keyof typeof VAULT_AUDIT_EVENT_TYPES];

/** A vault as a request names it: its id, its kind, and the intern it belongs to (intern scope). */
interface ResolvedVault {
  vaultId: string;
  scope: VaultScope['kind'];
  internId: string | null;
  workspaceId: string;
}

interface SecretRow {
  name: string;
  hosts: string[];
  fingerprint: string;
  created_at: string;
}

const SECRET_COLUMNS = `name, hosts, fingerprint, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at`;

function secretOf(row: SecretRow): VaultSecret {
  return { name: row.name, hosts: row.hosts, fingerprint: row.fingerprint, created_at: row.created_at };
}

function secretNotFound(name: string): DomainError {
  return new DomainError('not_found', `secret ${name} not found`);
}

/** One write or delete of a secret as its vault's audit records it. */
interface VaultAuditRecord {
  type: VaultAuditEventType;
  vault: ResolvedVault;
  name: string;
  fingerprint: string;
  /** `callerId` of who asked. */
  actor: string;
  at: string;
}

type VaultAuditEvent = {
  type: VaultAuditEventType;
  data: Pick<ResolvedVault, 'scope' | 'vaultId' | 'workspaceId' | 'internId'> & Pick<VaultAuditRecord, 'name' | 'fingerprint' | 'actor' | 'at'>;
};

/** An audit decides nothing on its past: every record is one event, so appending never reads the stream's events. */
const vaultAuditDecider: Decider<null, VaultAuditRecord, VaultAuditEvent> = {
  initialState: () => null,
  evolve: (state) => state,
  decide: ({ type, vault, name, fingerprint, actor, at }) => [
    {
      type,
      data: { scope: vault.scope, vaultId: vault.vaultId, workspaceId: vault.workspaceId, internId: vault.internId, name, fingerprint, actor, at },
    },
  ],
};

/**
 * The vault's secrets (interface section 18). Values arrive with a write and are sealed at once to the vault's
 * public key (VaultSealer): this service stores what it cannot open. Fingerprints are HMAC-SHA256 under a key of
 * each vault (derived from the `vault_fingerprint_secret` setting and the vault's id) of the value's keyed digest
 * (`vault_digest_secret`), kept with the row, so a copy into an intern's vault gets that vault's fingerprint
 * without the value: equal values in one vault have equal fingerprints, never across vaults. Each write and delete
 * is recorded in the vault's audit stream (who, which scope, name, fingerprint), in the transaction of the write.
 */
export class VaultService {
  private secrets: Promise<{ fingerprint: string; digest: string }> | null = null;
  private readonly audit: CommandHandler<null, VaultAuditRecord, VaultAuditEvent>;

  constructor(
    private readonly dataSource: DataSource,
    store: PostgresEventStore,
    private readonly sealer: VaultSealer,
  ) {
    this.audit = new CommandHandler(store, { decider: vaultAuditDecider, streamType: VAULT_AUDIT_STREAM_TYPE });
  }

  async list(request: VaultListRequest): Promise<VaultSecretList> {
    const vault = await this.resolve(request.context, request.scope);
    const { limit, offset } = request.query;
    const rows: SecretRow[] = await this.dataSource.query(
      `SELECT ${SECRET_COLUMNS} FROM lifecycle.vault_secrets WHERE vault_id = $1 ORDER BY name LIMIT $2 OFFSET $3`,
      [vault.vaultId, limit + 1, offset],
    );
    return { data: rows.slice(0, limit).map(secretOf), has_more: rows.length > limit };
  }

  async put(request: VaultPutRequest): Promise<{ data: VaultSecret }> {
    const vault = await this.resolve(request.context, request.scope);
    const { value, hosts } = request.body;
    const digest = await this.digestOf(value);
    const fingerprint = await this.fingerprintOf(vault.vaultId, digest);
    const sealed = await this.sealer.seal(value, request.name);
    let written: SecretRow | undefined;
    await this.audited(vault, request.context, [{ type: VAULT_AUDIT_EVENT_TYPES.written, name: request.name, fingerprint }], async (manager) => {
      [written] = await manager.query(
        `INSERT INTO lifecycle.vault_secrets (vault_id, scope, name, sealed, digest, fingerprint, hosts, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now())
         ON CONFLICT (vault_id, name) DO UPDATE
           SET sealed = EXCLUDED.sealed, digest = EXCLUDED.digest, fingerprint = EXCLUDED.fingerprint,
               hosts = EXCLUDED.hosts, created_at = EXCLUDED.created_at
         RETURNING ${SECRET_COLUMNS}`,
        [vault.vaultId, vault.scope, request.name, sealed, digest, fingerprint, hosts],
      );
    });
    return { data: secretOf(written as SecretRow) };
  }

  async delete(request: VaultDeleteRequest): Promise<{ deleted: true }> {
    const vault = await this.resolve(request.context, request.scope);
    const [existing]: { fingerprint: string }[] = await this.dataSource.query(
      'SELECT fingerprint FROM lifecycle.vault_secrets WHERE vault_id = $1 AND name = $2',
      [vault.vaultId, request.name],
    );
    if (existing === undefined) throw secretNotFound(request.name);
    await this.audited(vault, request.context, [{ type: VAULT_AUDIT_EVENT_TYPES.deleted, name: request.name, fingerprint: existing.fingerprint }], async (manager) => {
      // TypeORM answers a DELETE with [rows, affected].
      const [, affected] = (await manager.query('DELETE FROM lifecycle.vault_secrets WHERE vault_id = $1 AND name = $2', [
        vault.vaultId,
        request.name,
      ])) as [unknown[], number];
      // Deleted meanwhile by another request: that one answered 204 and was audited; this one finds nothing.
      if (affected === 0) throw secretNotFound(request.name);
    });
    return { deleted: true };
  }

  /** Workspace secrets into the intern's vault, values and hosts, replacing same-named ones: all or none. */
  async copy(request: VaultCopyRequest): Promise<{ data: VaultSecret[] }> {
    const workspace = await this.resolve(request.context, { kind: 'workspace' });
    const intern = await this.resolve(request.context, { kind: 'intern', internId: request.internId });
    const sources: { name: string; sealed: string; digest: string; hosts: string[] }[] = await this.dataSource.query(
      'SELECT name, sealed, digest, hosts FROM lifecycle.vault_secrets WHERE vault_id = $1 AND name = ANY($2::text[])',
      [workspace.vaultId, request.names],
    );
    const byName = new Map(sources.map((source) => [source.name, source]));
    const missing = request.names.find((name) => !byName.has(name));
    if (missing !== undefined) throw new DomainError('not_found', `workspace secret ${missing} not found; nothing was copied`);
    const copies = await Promise.all(
      request.names.map(async (name) => {
        const source = byName.get(name) as (typeof sources)[number];
        return { ...source, fingerprint: await this.fingerprintOf(intern.vaultId, source.digest) };
      }),
    );
    const written: SecretRow[] = [];
    const events = copies.map((copy) => ({ type: VAULT_AUDIT_EVENT_TYPES.written, name: copy.name, fingerprint: copy.fingerprint }));
    await this.audited(intern, request.context, events, async (manager) => {
      for (const copy of copies) {
        const [row]: SecretRow[] = await manager.query(
          `INSERT INTO lifecycle.vault_secrets (vault_id, scope, name, sealed, digest, fingerprint, hosts, created_at)
           VALUES ($1, 'intern', $2, $3, $4, $5, $6, now())
           ON CONFLICT (vault_id, name) DO UPDATE
             SET sealed = EXCLUDED.sealed, digest = EXCLUDED.digest, fingerprint = EXCLUDED.fingerprint,
                 hosts = EXCLUDED.hosts, created_at = EXCLUDED.created_at
           RETURNING ${SECRET_COLUMNS}`,
          [intern.vaultId, copy.name, copy.sealed, copy.digest, copy.fingerprint, copy.hosts],
        );
        written.push(row);
      }
    });
    return { data: written.map(secretOf) };
  }

  /**
   * What the egress proxy enforces for an intern (interface section 19): its allow list, and every secret it may use
   * with its hosts and sealed value, by name: its own vault's, else the attached vault's, else the workspace's. An
   * intern that is not there (any more) has `allow: null`: nothing may leave for it.
   */
  async egressContext(request: EgressContextRequest): Promise<EgressContextReply> {
    if (!isUuid(request.internId)) return { allow: null, secrets: [] };
    const [intern]: { egress_allow: string[]; vault_id: string; attached_vault_id: string | null; workspace_id: string }[] =
      await this.dataSource.query('SELECT egress_allow, vault_id, attached_vault_id, workspace_id FROM lifecycle.interns WHERE id = $1', [
        request.internId,
      ]);
    if (intern === undefined) return { allow: null, secrets: [] };
    const secrets: EgressContextSecret[] = await this.dataSource.query(
      `SELECT DISTINCT ON (name) name, hosts, sealed FROM lifecycle.vault_secrets
        WHERE vault_id = ANY($1::uuid[])
        ORDER BY name, array_position($1::uuid[], vault_id)`,
      [[intern.vault_id, intern.attached_vault_id, intern.workspace_id].filter((id): id is string => id !== null)],
    );
    return { allow: intern.egress_allow, secrets };
  }

  /** The vault a request means; an intern the caller cannot see (or an intern key) is 404, as on intern routes. */
  private async resolve(context: RequestContext, scope: VaultScope): Promise<ResolvedVault> {
    const { principal } = context;
    if (principal.kind === 'intern') throw new DomainError('not_found', 'not found');
    if (scope.kind === 'workspace') {
      return { vaultId: principal.workspaceId, scope: 'workspace', internId: null, workspaceId: principal.workspaceId };
    }
    const row = await visibleInternRow(this.dataSource, scope.internId, principal);
    return { vaultId: row.vault_id, scope: 'intern', internId: row.id, workspaceId: row.workspace_id };
  }

  /** Runs `write` and appends its audit events to the vault's stream in one transaction. */
  private async audited(
    vault: ResolvedVault,
    context: RequestContext,
    entries: { type: VaultAuditEventType; name: string; fingerprint: string }[],
    write: (manager: EntityManager) => Promise<void>,
  ): Promise<void> {
    const actor = callerId(context.principal);
    const at = new Date().toISOString();
    // Two writers to one vault meet on the audit stream's version: the second reads its head again and tries again,
    // `write` included (it runs only in the append that commits).
    await this.audit.handleAtHead(
      vaultAuditStreamId(vault.vaultId),
      entries.map((entry) => ({ ...entry, vault, actor, at })),
      { metadata: eventMetadata(context), inTransaction: write },
    );
  }

  private async digestOf(value: string): Promise<string> {
    const { digest } = await this.keys();
    return createHmac('sha256', digest).update(value, 'utf8').digest('hex');
  }

  private async fingerprintOf(vaultId: string, digest: string): Promise<string> {
    const { fingerprint } = await this.keys();
    const vaultKey = createHmac('sha256', fingerprint).update(vaultId).digest();
    return createHmac('sha256', vaultKey).update(digest).digest('hex');
  }

  private keys(): Promise<{ fingerprint: string; digest: string }> {
    this.secrets ??= this.dataSource
      .query(`SELECT name, value FROM lifecycle.settings WHERE name IN ('vault_fingerprint_secret', 'vault_digest_secret')`)
      .then((rows: { name: string; value: string }[]) => {
        const value = (name: string) => {
          const found = rows.find((row) => row.name === name);
          if (found === undefined) throw new Error(`lifecycle.settings has no ${name}: the vault migration did not run`);
          return found.value;
        };
        return { fingerprint: value('vault_fingerprint_secret'), digest: value('vault_digest_secret') };
      })
      .catch((error: unknown) => {
        this.secrets = null;
        throw error;
      });
    return this.secrets;
  }
}
