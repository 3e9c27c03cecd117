import { createHash, randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { DaemonTokenCheckReply } from '@interns/contracts';

/** 32 random bytes, base64url: what the daemon-access route reveals. */
export function newDaemonToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Only this is stored; the token itself exists only in the answer to its caller. */
export function daemonTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export interface IssuedDaemonToken {
  token: string;
  internId: string;
  memberId: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Inside the reveal's transaction: stores the hash, and drops the intern's expired tokens on the way. */
export async function storeDaemonToken(manager: EntityManager, issued: IssuedDaemonToken): Promise<void> {
  await manager.query(`DELETE FROM lifecycle.daemon_tokens WHERE intern_id = $1 AND expires_at <= $2`, [
    issued.internId,
    issued.createdAt,
  ]);
  await manager.query(
    `INSERT INTO lifecycle.daemon_tokens (token_sha256, intern_id, member_id, expires_at, created_at)
     VALUES ($1, $2, $3, $4, $5)`,
    [daemonTokenHash(issued.token), issued.internId, issued.memberId, issued.expiresAt, issued.createdAt],
  );
}

export async function revokeDaemonTokens(manager: EntityManager, internId: string): Promise<void> {
  await manager.query(`DELETE FROM lifecycle.daemon_tokens WHERE intern_id = $1`, [internId]);
}

/**
 * Tokens of members no longer active, and of interns whose organization left the programme (both are identity
 * facts lifecycle only learns from admin). Returns how many were deleted.
 */
export async function revokeDaemonTokensOfIdentities(
  dataSource: DataSource,
  memberIds: string[],
  organizationIds: string[],
): Promise<number> {
  // Counted in a SELECT: a bare DELETE answers TypeORM's [rows, affected] pair instead of rows.
  const [{ revoked }]: { revoked: number }[] = await dataSource.query(
    `WITH deleted AS (
       DELETE FROM lifecycle.daemon_tokens t
       WHERE t.member_id = ANY($1::text[])
          OR t.intern_id IN (SELECT i.id FROM lifecycle.interns i WHERE i.organization_id = ANY($2::text[]))
       RETURNING 1
     )
     SELECT count(*)::int AS revoked FROM deleted`,
    [memberIds, organizationIds],
  );
  return revoked;
}

const INVALID: DaemonTokenCheckReply = { valid: false, internId: null, memberId: null, expiresAt: null };

/**
 * What a runtime learns about a token it was shown: valid only while stored, not expired and its intern is
 * `running`. Suspend and delete already remove the rows; the status check keeps that true should a row outlive them.
 */
export async function checkDaemonToken(dataSource: DataSource, token: unknown, now: Date): Promise<DaemonTokenCheckReply> {
  if (typeof token !== 'string' || token === '') return INVALID;
  const rows: { intern_id: string; member_id: string; expires_at: Date }[] = await dataSource.query(
    `SELECT t.intern_id, t.member_id, t.expires_at
     FROM lifecycle.daemon_tokens t JOIN lifecycle.interns i ON i.id = t.intern_id AND i.status = 'running'
     WHERE t.token_sha256 = $1 AND t.expires_at > $2`,
    [daemonTokenHash(token), now],
  );
  const row = rows[0];
  if (!row) return INVALID;
  return { valid: true, internId: row.intern_id, memberId: row.member_id, expiresAt: row.expires_at.toISOString() };
}
