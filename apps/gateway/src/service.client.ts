import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, subjectsFor } from '@interns/contracts';
import type { PlatformConfig, RequestContext, Subjects } from '@interns/contracts';
import { RpcClient, RpcRequestOptions, RpcTimeoutError } from '@interns/messaging';
import type { GatewayRequestState } from './gateway-request';

/** What Fastify sends for a JSON reply it serialized itself; passed-through bodies say the same. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Forwards a checked request to a service (lifecycle, runs) over the process's one RPC client. The reply must
 * come within what is left of the route deadline, measured from the request's arrival.
 */
export class ServiceClient {
  readonly subjects: Subjects;

  constructor(
    private readonly rpc: RpcClient,
    config: PlatformConfig,
  ) {
    this.subjects = subjectsFor(config.natsPrefix);
  }

  /** Who is calling, for the payload's `context`; the admission hook has set both. */
  contextOf(request: FastifyRequest): RequestContext {
    const state = request.gateway;
    if (state === null || state.principal === null) {
      // Only reachable if a route under /interns were served without the admission hook: refuse rather than guess.
      throw new DomainError('internal_error', 'request was not authenticated');
    }
    return { correlationId: state.correlationId, principal: state.principal };
  }

  async request<Res>(subject: string, request: FastifyRequest, payload: { context: RequestContext }): Promise<Res> {
    return this.rpc.request<Res>(subject, payload, this.optionsFor(subject, request, payload));
  }

  /**
   * For routes that answer exactly the service's response (hot reads): its JSON bytes are written through as
   * the 200 body, never parsed and serialized again here.
   */
  async forwardBody(subject: string, request: FastifyRequest, reply: FastifyReply, payload: { context: RequestContext }): Promise<FastifyReply> {
    const body = await this.rpc.requestBody(subject, payload, this.optionsFor(subject, request, payload));
    return reply.type(JSON_CONTENT_TYPE).send(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }

  /** For RPCs the gateway makes on its own account (the door's checks): what is left of the route deadline. */
  deadlineOf(request: FastifyRequest): { timeoutMs: number; correlationId: string } {
    const state = request.gateway;
    if (state === null) throw new RpcTimeoutError(`${request.method} ${request.url}`, 0);
    return remainingDeadline(state, `${request.method} ${request.url}`);
  }

  private optionsFor(subject: string, request: FastifyRequest, payload: { context: RequestContext }): RpcRequestOptions {
    const state = request.gateway;
    if (state === null) throw new RpcTimeoutError(subject, 0);
    return { ...remainingDeadline(state, subject), correlationId: payload.context.correlationId };
  }
}

/** The route deadline left since the request arrived; RpcTimeoutError (408) when it has passed. */
export function remainingDeadline(state: GatewayRequestState, what: string): { timeoutMs: number; correlationId: string } {
  const remainingMs = state.routeDeadlineMs - (performance.now() - state.arrivedAt);
  if (remainingMs < 1) throw new RpcTimeoutError(what, 0);
  return { timeoutMs: Math.floor(remainingMs), correlationId: state.correlationId };
}
