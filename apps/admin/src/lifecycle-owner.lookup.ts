import type { NatsConnection } from '@nats-io/transport-node';
import { InternOwnerReply, InternOwnerRequest, subjectsFor } from '@interns/contracts';
import type { InternOwnerLookup } from './commands/intern-key.command';
import { askLifecycle } from './lifecycle.rpc';

/** The lifecycle service's `intern-owner` query, with its failures put in operator terms. */
export function lifecycleOwnerLookup(nc: NatsConnection, natsPrefix: string): InternOwnerLookup {
  const subject = subjectsFor(natsPrefix).lifecycle.internOwner;
  return (internId) => {
    const request: InternOwnerRequest = { internId };
    return askLifecycle<InternOwnerReply>(nc, subject, request, () => `intern ${internId} not found`);
  };
}
