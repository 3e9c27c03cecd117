import type { NatsConnection } from '@nats-io/transport-node';
import { DomainError } from '@interns/contracts';
import type { InternView, RequestContext, Subjects } from '@interns/contracts';
import { RpcClient, visibleIntern } from '@interns/messaging';

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
  visible(context: RequestContext, internId: string): Promise<InternView> {
    return visibleIntern(this.rpc, this.subjects, context, internId);
  }
}
