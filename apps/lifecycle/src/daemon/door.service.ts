import type { DataSource } from 'typeorm';
import { PreparedReads } from '@interns/database';
import { DomainError } from '@interns/contracts';
import type {
  ClaimDaemonNonceReply,
  ClaimDaemonNonceRequest,
  DoorIntern,
  InternByHostnameReply,
  InternByHostnameRequest,
  InternStatus,
} from '@interns/contracts';

const INTERN_BY_HOSTNAME_SQL = `SELECT id, name, status, organization_id, workspace_id FROM lifecycle.interns WHERE hostname = $1`;

/** A hostname as DNS allows it; anything longer names no intern and is not worth a query. */
const MAX_HOSTNAME_CHARS = 253;
/** As the signing service mints them (16 random bytes, base64url) and the verifier accepts them. */
const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
/** Expired nonces are swept at most this often by one replica; a claim never depends on the sweep. */
const NONCE_SWEEP_INTERVAL_MS = 60_000;

/**
 * What the gateway's door asks of lifecycle (interface section 20): which intern a hostname names (a hot read,
 * served lean through the interns_hostname index) and the one-time claim of a v2 signature's nonce, kept in
 * PostgreSQL so that every gateway replica sees the same claims.
 */
export class DoorService {
  private readonly reads: PreparedReads;
  private lastSweep = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly now: () => number = Date.now,
  ) {
    this.reads = new PreparedReads(dataSource);
  }

  async internByHostname(request: InternByHostnameRequest): Promise<InternByHostnameReply> {
    const hostname = request?.hostname;
    if (typeof hostname !== 'string' || hostname === '' || hostname.length > MAX_HOSTNAME_CHARS) return { intern: null };
    const rows = await this.reads.rows<{ id: string; name: string; status: InternStatus; organization_id: string; workspace_id: string }>(
      'lifecycle_intern_by_hostname',
      INTERN_BY_HOSTNAME_SQL,
      [hostname],
    );
    const row = rows[0];
    if (!row) return { intern: null };
    const intern: DoorIntern = {
      id: row.id,
      name: row.name,
      status: row.status,
      organizationId: row.organization_id,
      workspaceId: row.workspace_id,
    };
    return { intern };
  }

  /**
   * Inserts the nonce, or takes over a record whose window has passed; either way exactly one concurrent claim
   * gets the row back (the primary key serializes them).
   */
  async claimNonce(request: ClaimDaemonNonceRequest): Promise<ClaimDaemonNonceReply> {
    const nonce = request?.nonce;
    const expiresAt = request?.expiresAt;
    if (typeof nonce !== 'string' || !NONCE_PATTERN.test(nonce)) throw new DomainError('invalid_body', 'nonce is not a base64url nonce');
    if (!Number.isSafeInteger(expiresAt) || expiresAt < 0) throw new DomainError('invalid_body', 'expiresAt must be unix seconds');
    await this.sweepExpiredNonces();
    const rows = await this.reads.rows<{ nonce: string }>(
      'lifecycle_claim_daemon_nonce',
      `INSERT INTO lifecycle.daemon_nonces (nonce, expires_at) VALUES ($1, to_timestamp($2))
       ON CONFLICT (nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE lifecycle.daemon_nonces.expires_at < now()
       RETURNING nonce`,
      [nonce, expiresAt],
    );
    return { claimed: rows.length === 1 };
  }

  private async sweepExpiredNonces(): Promise<void> {
    const now = this.now();
    if (now - this.lastSweep < NONCE_SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    await this.dataSource.query(`DELETE FROM lifecycle.daemon_nonces WHERE expires_at < now()`);
  }
}
