// listeners/: the proxy listener opened for each sandboxed command (interface section 19), the intern's policy and
// sealed secrets it asks of lifecycle, and the secret placeholders it fills in.
import type { NatsConnection } from '@nats-io/transport-node';
import type { EgressContextReply, EgressContextRequest, Subjects } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';

/** Lifecycle answers from one indexed read; this bounds a request's wait for its policy. */
const CONTEXT_TIMEOUT_MS = 5_000;

/** An intern's egress policy and usable secrets (sealed), asked of lifecycle, which owns both. */
export class EgressContextClient {
  private readonly rpc: RpcClient;

  constructor(
    nc: NatsConnection,
    private readonly subjects: Subjects['lifecycle'],
  ) {
    this.rpc = new RpcClient(nc);
  }

  fetch(internId: string): Promise<EgressContextReply> {
    const request: EgressContextRequest = { internId };
    return this.rpc.request<EgressContextReply>(this.subjects.egressContext, request, { timeoutMs: CONTEXT_TIMEOUT_MS });
  }
}
