import type { DataSource } from 'typeorm';
import type { DaemonAccessReply, DaemonAccessRequest, DaemonTokenCheckReply, DaemonTokenCheckRequest } from '@interns/contracts';
import type { DaemonAuditLog } from './daemon-audit.log';
import { daemonCaller, lockRunningIntern } from './daemon-caller';
import { checkDaemonToken, newDaemonToken, storeDaemonToken } from './daemon-tokens';

/** Reveals daemon tokens (each reveal audited, in the same transaction as the token) and validates them. */
export class DaemonAccessService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: DaemonAuditLog,
    private readonly tokenTtlMs: number,
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
          expiresAt: new Date(createdAt.getTime() + this.tokenTtlMs),
        });
      },
    );
    return { origin: `https://${row.hostname}`, token };
  }

  check(request: DaemonTokenCheckRequest): Promise<DaemonTokenCheckReply> {
    return checkDaemonToken(this.dataSource, request?.token, this.now());
  }
}
