import type { InternOwnerReply, InternOwnerRequest, Subjects } from '@interns/contracts';
import { RemoteServiceError, type RpcClient } from '@interns/messaging';
import type { InternWorkspaceLookup } from './event-audience';

/** Lifecycle answers an owner lookup at once; a slow answer holds the feed's later events back, so it is kept short. */
const LOOKUP_TIMEOUT_MS = 5_000;

/** Which workspace an intern is in, asked of lifecycle (`internOwner`); null when lifecycle knows no such intern. */
export function internWorkspaceLookup(rpc: RpcClient, subjects: Subjects['lifecycle']): InternWorkspaceLookup {
  return async (internId) => {
    const request: InternOwnerRequest = { internId };
    try {
      return (await rpc.request<InternOwnerReply>(subjects.internOwner, request, { timeoutMs: LOOKUP_TIMEOUT_MS })).workspaceId;
    } catch (error) {
      if (error instanceof RemoteServiceError && error.payload.reason === 'not_found') return null;
      throw error;
    }
  };
}
