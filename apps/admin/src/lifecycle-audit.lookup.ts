import type { NatsConnection } from '@nats-io/transport-node';
import { DaemonAuditReply, DaemonAuditRequest, subjectsFor } from '@interns/contracts';
import type { DaemonAuditLookup } from './commands/audit.command';
import { askLifecycle } from './lifecycle.rpc';

/** The lifecycle service's `daemon-audit` query, with its failures put in operator terms. */
export function lifecycleAuditLookup(nc: NatsConnection, natsPrefix: string): DaemonAuditLookup {
  const subject = subjectsFor(natsPrefix).lifecycle.daemonAudit;
  return (internId) => {
    const request: DaemonAuditRequest = { internId };
    return askLifecycle<DaemonAuditReply>(nc, subject, request, () => `intern ${internId} not found`);
  };
}
