// log/: the egress log (interface section 19): the entries the proxy writes, the pages its route reads, the purge
// with the intern and the sweep past EGRESS_LOG_RETENTION_MS.
import { Logger } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import type { EgressLogPage, EgressLogRequest, PurgeEgressLogRequest, RuntimeStepReply, Subjects } from '@interns/contracts';
import type { EgressContext, EgressLogEntry } from '@interns/egress-proxy';
import { RpcClient, visibleIntern } from '@interns/messaging';
import { EGRESS_LOG_PURGE_BATCH, type EgressLogStore } from './egress-log.store';

/**
 * The egress log (interface section 19): what the proxy handled, recorded as it happens, and read per intern by
 * whoever sees the intern (lifecycle decides, as on every intern route).
 */
export class EgressLogService {
  private readonly logger = new Logger('EgressLog');
  private readonly rpc: RpcClient;
  /** Appends not yet written: awaited at shutdown, so an entry of the last request is not lost. */
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly store: EgressLogStore,
    nc: NatsConnection,
    private readonly subjects: Subjects['lifecycle'],
  ) {
    this.rpc = new RpcClient(nc);
  }

  /** The proxy's log sink: never throws, never waits; a failed write is reported in the service's log. */
  record(entry: EgressLogEntry, context: EgressContext): void {
    const write = this.store
      .append(context.internId, context.runId, entry)
      .catch((error: unknown) => this.logger.error(`an egress log entry of intern ${context.internId} was not written: ${(error as Error).message}`))
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  async page(request: EgressLogRequest): Promise<EgressLogPage> {
    const intern = await visibleIntern(this.rpc, this.subjects, request.context, request.internId);
    return this.store.page(intern.id, request.limit, request.startingAfter);
  }

  /** Every entry of a deleted intern, batch after batch (idempotent: a repeated purge finds nothing). */
  async purge(request: PurgeEgressLogRequest): Promise<RuntimeStepReply> {
    for (;;) {
      const deleted = await this.store.purgeIntern(request.internId.toLowerCase());
      if (deleted < EGRESS_LOG_PURGE_BATCH) return { ok: true };
    }
  }

  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }
}
