import type { FastifyReply, FastifyRequest } from 'fastify';
import { callerId, DOOR_INVOKE_ROUTE, INVOKE_FREE_TEXT, parseInvokeBody } from '@interns/contracts';
import type { DoorIdentity, InvokeReply, InvokeRequest } from '@interns/contracts';
import { jsonBodyOf } from '../http/body-rules';
import type { ChatTurnCounter } from '../chat/chat-turn-counter';
import { HttpErrorException } from '../chat/http-error.exception';
import type { ServiceClient } from '../service.client';
import type { DoorAccess } from './door-gate';
import type { DoorRoute } from './door-routes';
import type { DoorSignatures } from './door-signatures';

/**
 * The door's routes (interface section 20) as adapters: `GET /` tells who the token is, `POST /api/invoke` is
 * section 7's invoke, signed. Both run after the DoorGate, as the token's member in the intern's workspace.
 */
export class DoorHandlers {
  constructor(
    private readonly services: ServiceClient,
    private readonly signatures: DoorSignatures,
    private readonly turns: ChatTurnCounter,
  ) {}

  routes(): DoorRoute[] {
    return [
      { method: 'GET', path: '/', runRoute: false, handle: (request, reply, access) => this.identity(reply, access) },
      {
        method: DOOR_INVOKE_ROUTE.method,
        path: DOOR_INVOKE_ROUTE.path,
        runRoute: true,
        handle: (request, reply, access) => this.invoke(request, reply, access),
      },
    ];
  }

  private async identity(reply: FastifyReply, access: DoorAccess): Promise<FastifyReply> {
    const identity: DoorIdentity = {
      intern_id: access.intern.id,
      name: access.intern.name,
      status: access.intern.status,
      member_id: access.token.memberId,
      expires_at: access.token.expiresAt,
    };
    return reply.header('cache-control', 'no-store').send(identity);
  }

  /**
   * Body rules first (413, 415, 400, as on the API), then the signature over the bytes received, then the turn
   * limiter (only a genuine request spends the member's budget), then runs starts the run as for `/api/v1`.
   */
  private async invoke(request: FastifyRequest, reply: FastifyReply, access: DoorAccess): Promise<FastifyReply> {
    const body = parseInvokeBody(jsonBodyOf(request, INVOKE_FREE_TEXT));
    const context = this.services.contextOf(request);
    const refusal = await this.signatures.check({
      headers: request.headers,
      internId: access.intern.id,
      memberId: access.token.memberId,
      body: request.body as Buffer,
      target: request.url,
      deadline: this.services.deadlineOf(request),
    });
    if (refusal !== null) throw new HttpErrorException(refusal);
    await this.turns.count(callerId(access.principal), access.intern.id);
    const payload: InvokeRequest = { context, internId: access.intern.id, input: body.input, sessionId: body.session_id ?? null };
    const answer = await this.services.request<InvokeReply>(this.services.subjects.runs.invoke, request, payload);
    return reply.code(202).send(answer);
  }
}
