import type { NatsConnection } from '@nats-io/transport-node';
import { InternOwnerReply, InternOwnerRequest, subjectsFor } from '@interns/contracts';
import { RemoteServiceError, RpcClient, RpcTimeoutError, RpcUnavailableError } from '@interns/messaging';
import type { InternOwnerLookup } from './commands/intern-key.command';

export const OWNER_LOOKUP_TIMEOUT_MS = 10000;

/** The lifecycle service's `intern-owner` query, with its failures put in operator terms. */
export function lifecycleOwnerLookup(nc: NatsConnection, natsPrefix: string): InternOwnerLookup {
  const rpc = new RpcClient(nc);
  const subject = subjectsFor(natsPrefix).lifecycle.internOwner;
  return async (internId) => {
    const request: InternOwnerRequest = { internId };
    try {
      return await rpc.request<InternOwnerReply>(subject, request, { timeoutMs: OWNER_LOOKUP_TIMEOUT_MS });
    } catch (error) {
      if (error instanceof RemoteServiceError && error.payload.reason === 'not_found') {
        throw new Error(`intern ${internId} not found`, { cause: error });
      }
      if (error instanceof RpcUnavailableError) throw new Error('lifecycle service is not running', { cause: error });
      if (error instanceof RpcTimeoutError) {
        throw new Error(`lifecycle service did not answer within ${OWNER_LOOKUP_TIMEOUT_MS / 1000} s`, { cause: error });
      }
      throw new Error(`lifecycle service refused: ${(error as Error).message}`, { cause: error });
    }
  };
}
