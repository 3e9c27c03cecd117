import { DomainError } from '@interns/contracts';
import type { GetInternRequest, InternView, RequestContext, Subjects } from '@interns/contracts';
import { RemoteServiceError, type RpcClient } from './rpc-client';

/** Lifecycle answers a visibility lookup quickly; this bounds it well inside any route's deadline. */
const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * The intern a route names, in any status, when the caller may see it: lifecycle applies visibility, and its
 * refusal (404) comes back as the DomainError it was; no answer is a retryable internal error.
 */
export async function visibleIntern(rpc: RpcClient, subjects: Subjects['lifecycle'], context: RequestContext, internId: string): Promise<InternView> {
  const request: GetInternRequest = { context, internId };
  try {
    return await rpc.request<InternView>(subjects.getIntern, request, { timeoutMs: LOOKUP_TIMEOUT_MS, correlationId: context.correlationId });
  } catch (error) {
    if (error instanceof RemoteServiceError) throw new DomainError(error.payload.reason, error.payload.message);
    throw new DomainError('internal_error', 'the lifecycle service did not answer; try again');
  }
}
