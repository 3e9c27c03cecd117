// daemon/: daemon access (CONTRACT section 8): an intern's daemon tokens and their revocation, request signing, the
// door's hostname lookup and nonce claims, and the audit.
import type { DataSource } from 'typeorm';
import {
  DaemonAccessReply,
  DaemonAccessRequest,
  DaemonTokenCheckReply,
  DaemonTokenCheckRequest,
  DomainError,
  internOriginOf,
  RevokeDaemonTokensReply,
  RevokeDaemonTokensRequest,
} from '@interns/contracts';
import type { DaemonAuditLog } from './daemon-audit.log';
import { daemonCaller, lockRunningIntern } from './daemon-caller';
import { checkDaemonToken, newDaemonToken, revokeDaemonTokensOfIdentities, storeDaemonToken } from './daemon-tokens';

export interface DaemonAccessOptions {
  /** DAEMON_TOKEN_TTL_MS. */
  tokenTtlMs: number;
  /** INTERN_ORIGIN: the revealed `origin`, `{hostname}` replaced by the intern's (CONTRACT section 20). */
  internOrigin: string;
}

/** Reveals daemon tokens (each reveal audited, in the same transaction as the token) and validates them. */
export class DaemonAccessService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: DaemonAuditLog,
    private readonly options: DaemonAccessOptions,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async reveal(request: DaemonAccessRequest): Promise<DaemonAccessReply> {
    const { row, memberId } = await daemonCaller(this.dataSource, request.internId, request.context.principal, {
      vaultRead: false,
    });
    if (row.hostname === null) throw new Error(`running intern ${row.id} has no hostname`);
    const createdAt = this.now();
    const token = newDaemonToken();
    await this.audit.record(
      { kind: 'daemon_access', internId: row.id, memberId, at: createdAt.toISOString() },
      request.context,
      async (manager) => {
        await lockRunningIntern(manager, row.id);
        await storeDaemonToken(manager, {
          token,
          internId: row.id,
          memberId,
          createdAt,
          expiresAt: new Date(createdAt.getTime() + this.options.tokenTtlMs),
        });
      },
    );
    return { origin: internOriginOf(this.options.internOrigin, row.hostname), token };
  }

  async revokeOfIdentities(request: RevokeDaemonTokensRequest): Promise<RevokeDaemonTokensReply> {
    const memberIds = request?.memberIds;
    const organizationIds = request?.organizationIds;
    if (!isStringList(memberIds) || !isStringList(organizationIds)) {
      throw new DomainError('invalid_body', 'memberIds and organizationIds must be lists of strings');
    }
    return { revoked: await revokeDaemonTokensOfIdentities(this.dataSource, memberIds, organizationIds) };
  }

  check(request: DaemonTokenCheckRequest): Promise<DaemonTokenCheckReply> {
    return checkDaemonToken(this.dataSource, request?.token, this.now());
  }
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}
