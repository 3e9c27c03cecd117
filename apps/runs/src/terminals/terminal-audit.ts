import type { NatsConnection } from '@nats-io/transport-node';
import type { Subjects, TerminalAuditKind, TerminalAuditRequest } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';

/** Lifecycle appends to the intern's audit stream in one transaction: a few seconds is ample. */
const AUDIT_TIMEOUT_MS = 10_000;

/** A terminal's attach or detach, recorded in the intern's audit by lifecycle (interface sections 11 and 20). */
export class TerminalAudit {
  private readonly rpc: RpcClient;

  constructor(
    nc: NatsConnection,
    private readonly subjects: Subjects['lifecycle'],
  ) {
    this.rpc = new RpcClient(nc);
  }

  async record(kind: TerminalAuditKind, internId: string, memberId: string, correlationId: string): Promise<void> {
    const request: TerminalAuditRequest = { kind, internId, memberId, at: new Date().toISOString(), correlationId };
    await this.rpc.request(this.subjects.recordTerminalAudit, request, { timeoutMs: AUDIT_TIMEOUT_MS, correlationId });
  }
}
