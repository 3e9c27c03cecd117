import { Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callerId, parseDaemonSignBody } from '@interns/contracts';
import type { DaemonAccessReply, DaemonAccessRequest, DaemonSignReply, DaemonSignRequest } from '@interns/contracts';
import { jsonBodyOf } from '../http/body-rules';
import { ChatTurnCounter } from '../chat/chat-turn-counter';
import { INTERN_ID_PARAM, visibleId } from '../interns/intern-routes';
import { ServiceClient } from '../service.client';
import { DAEMON_ACCESS_ROUTES, DAEMON_SIGN_ROUTES } from './daemon-routes';

/** Revealed tokens and signatures are per request and personal: no cache may keep them. */
const NO_STORE = 'no-store';

/**
 * HTTP adapter of daemon access and signing (CONTRACT section 8), each under its route and its deprecated
 * alias (whose extra headers `DaemonAliasHeaders` adds). Checks 1-5 ran in the admission hook; here the body
 * rules (check 6) and the id's shape; lifecycle decides the rest (visibility, personal identity, scope,
 * running) and records the reveal or signing.
 */
@Controller('interns')
export class DaemonHttpController {
  constructor(
    @Inject(ServiceClient) private readonly services: ServiceClient,
    @Inject(ChatTurnCounter) private readonly turns: ChatTurnCounter,
  ) {}

  @Get(DAEMON_ACCESS_ROUTES)
  async access(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Param(INTERN_ID_PARAM) internId: string,
  ): Promise<DaemonAccessReply> {
    const payload: DaemonAccessRequest = { context: this.services.contextOf(request), internId: visibleId(internId) };
    const answer = await this.services.request<DaemonAccessReply>(this.services.subjects.lifecycle.daemonAccess, request, payload);
    reply.header('cache-control', NO_STORE);
    return answer;
  }

  /**
   * Counted against the chat turn limiter before lifecycle is asked, like invoke: a refused signing costs a
   * turn too, so probing cannot go faster than signing.
   */
  @Post(DAEMON_SIGN_ROUTES)
  @HttpCode(200)
  async sign(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Param(INTERN_ID_PARAM) rawInternId: string,
  ): Promise<DaemonSignReply> {
    const body = parseDaemonSignBody(jsonBodyOf(request));
    const internId = visibleId(rawInternId);
    const context = this.services.contextOf(request);
    await this.turns.count(callerId(context.principal), internId);
    const payload: DaemonSignRequest = { context, internId, body };
    const answer = await this.services.request<DaemonSignReply>(this.services.subjects.lifecycle.daemonSign, request, payload);
    reply.header('cache-control', NO_STORE);
    return answer;
  }
}
