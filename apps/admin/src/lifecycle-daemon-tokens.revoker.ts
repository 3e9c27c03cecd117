import { randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { RevokeDaemonTokensReply, RevokeDaemonTokensRequest, subjectsFor } from '@interns/contracts';
import type { DaemonTokenRevoker } from './commands/apply.command';
import { askLifecycle } from './lifecycle.rpc';

/** Asks the lifecycle service to delete the daemon tokens of deactivated members and departed organizations. */
export function lifecycleDaemonTokenRevoker(nc: NatsConnection, natsPrefix: string): DaemonTokenRevoker {
  const subject = subjectsFor(natsPrefix).lifecycle.revokeDaemonTokens;
  return async (memberIds, organizationIds) => {
    const request: RevokeDaemonTokensRequest = { memberIds, organizationIds, correlationId: `admin-${randomUUID()}` };
    return (await askLifecycle<RevokeDaemonTokensReply>(nc, subject, request)).revoked;
  };
}
