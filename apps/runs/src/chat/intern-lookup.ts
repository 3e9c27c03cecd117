import type { NatsConnection } from '@nats-io/transport-node';
import { DomainError } from '@interns/contracts';
import type { GetInternRequest, InternView, RequestContext, Subjects } from '@interns/contracts';
import { RemoteServiceError, RpcClient } from '@interns/messaging';

/** Lifecycle answers a visibility lookup quickly; this bounds it well inside the chat route deadline. */
const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * The intern a chat, invoke or run route names, as the caller may see it: lifecycle applies visibility (404),
 * and a new run needs the intern `running` (409 `intern_not_running`).
 */
export class InternLookup {
  private readonly rpc: RpcClient;

  constructor(
    nc: NatsConnection,
    private readonly subjects: Subjects['lifecycle'],
  ) {
    this.rpc = new RpcClient(nc);
  }

  async running(context: RequestContext, internId: string): Promise<InternView> {
    const intern = await this.visible(context, internId);
    if (intern.status !== 'running') {
      throw new DomainError('intern_not_running', `the intern is ${intern.status}, not running`);
    }
    return intern;
  }

  /** The intern in any status, when the caller may see it (else 404). */
  async visible(context: RequestContext, internId: string): Promise<InternView> {
    const request: GetInternRequest = { context, internId };
    let intern: InternView;
    try {
      intern = await this.rpc.request<InternView>(this.subjects.getIntern, request, {
        timeoutMs: LOOKUP_TIMEOUT_MS,
        correlationId: context.correlationId,
      });
    } catch (error) {
      if (error instanceof RemoteServiceError) throw new DomainError(error.payload.reason, error.payload.message);
      throw new DomainError('internal_error', 'the lifecycle service did not answer; try again');
    }
    return intern;
  }
}
