import { Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  CreateInternReply,
  CreateInternRequest,
  DeleteInternRequest,
  GetInternRequest,
  InternCommandRequest,
  InternIconReply,
  InternIconRequest,
  INTERN_FREE_TEXT,
  InternView,
  ListInternsRequest,
  parseCreateInternBody,
  parseDeleteInternBody,
  parseIdempotencyKey,
  parseListQuery,
  parseUpdateInternBody,
  ProvisionInternRequest,
  SuspendInternRequest,
  UpdateInternRequest,
} from '@interns/contracts';
import { assertNoCommandBody, jsonBodyOf, optionalJsonBodyOf } from '../http/body-rules';
import { iconAnswer } from './intern-icon.reply';
import { INTERN_ID_PARAM, visibleId } from './intern-routes';
import { ServiceClient } from '../service.client';

type RawQuery = Record<string, string | string[] | undefined>;

/** The success bodies of the command routes, answered by lifecycle as they go out (CONTRACT section 4). */
interface DeletingAnswer {
  deleting: true;
}
interface ProvisioningAnswer {
  provisioning: true;
}
interface SuspendedAnswer {
  suspended: true;
}

/**
 * HTTP adapter of the lifecycle routes (CONTRACT section 4). Checks 1-5 ran in the admission hook;
 * here: body rules, then the intern id (a non-uuid is 404, after the body rules), then lifecycle decides.
 */
@Controller('interns')
export class InternsHttpController {
  constructor(@Inject(ServiceClient) private readonly services: ServiceClient) {}

  /** An InternList, as lifecycle's bytes. */
  @Get()
  list(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<FastifyReply> {
    // Fastify's query parser has decoded `%2C` already, so `status=running%2Cstopped` splits like a comma.
    const query = parseListQuery(request.query as RawQuery);
    const payload: ListInternsRequest = { context: this.services.contextOf(request), ...query };
    return this.services.forwardBody(this.services.subjects.lifecycle.listInterns, request, reply, payload);
  }

  @Post()
  async create(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<InternView> {
    const body = parseCreateInternBody(jsonBodyOf(request, INTERN_FREE_TEXT));
    const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
    const payload: CreateInternRequest = { context: this.services.contextOf(request), body, idempotencyKey };
    const answer = await this.services.request<CreateInternReply>(this.services.subjects.lifecycle.createIntern, request, payload);
    reply.code(answer.replayed ? 200 : 201);
    return answer.intern;
  }

  /** An InternView, as lifecycle's bytes. */
  @Get(`:${INTERN_ID_PARAM}`)
  get(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param(INTERN_ID_PARAM) internId: string,
  ): Promise<FastifyReply> {
    const payload: GetInternRequest = { context: this.services.contextOf(request), internId: visibleId(internId) };
    return this.services.forwardBody(this.services.subjects.lifecycle.getIntern, request, reply, payload);
  }

  @Patch(`:${INTERN_ID_PARAM}`)
  update(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<InternView> {
    const body = parseUpdateInternBody(jsonBodyOf(request, INTERN_FREE_TEXT));
    const payload: UpdateInternRequest = {
      context: this.services.contextOf(request),
      internId: visibleId(internId),
      body,
    };
    return this.services.request<InternView>(this.services.subjects.lifecycle.updateIntern, request, payload);
  }

  @Delete(`:${INTERN_ID_PARAM}`)
  @HttpCode(202)
  remove(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<DeletingAnswer> {
    const body = parseDeleteInternBody(optionalJsonBodyOf(request));
    const payload: DeleteInternRequest = { ...this.commandOf(request, internId), body };
    return this.services.request<DeletingAnswer>(this.services.subjects.lifecycle.deleteIntern, request, payload);
  }

  @Post(`:${INTERN_ID_PARAM}/provision`)
  @HttpCode(202)
  provision(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<ProvisioningAnswer> {
    assertNoCommandBody(request);
    const payload: ProvisionInternRequest = this.commandOf(request, internId);
    return this.services.request<ProvisioningAnswer>(this.services.subjects.lifecycle.provisionIntern, request, payload);
  }

  @Post(`:${INTERN_ID_PARAM}/suspend`)
  @HttpCode(200)
  suspend(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<SuspendedAnswer> {
    assertNoCommandBody(request);
    const payload: SuspendInternRequest = this.commandOf(request, internId);
    return this.services.request<SuspendedAnswer>(this.services.subjects.lifecycle.suspendIntern, request, payload);
  }

  @Get(`:${INTERN_ID_PARAM}/icon`)
  async icon(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Param(INTERN_ID_PARAM) internId: string,
  ): Promise<Buffer | undefined> {
    const payload: InternIconRequest = this.commandOf(request, internId);
    const icon = await this.services.request<InternIconReply>(this.services.subjects.lifecycle.internIcon, request, payload);
    const answer = iconAnswer(icon, (request.query as RawQuery).v, request.headers['if-none-match']);
    reply.code(answer.status).headers(answer.headers);
    return answer.body;
  }

  /** Who asks about which intern; call it after the body rules, since a non-uuid id is 404 only then. */
  private commandOf(request: FastifyRequest, internId: string): InternCommandRequest {
    return { context: this.services.contextOf(request), internId: visibleId(internId) };
  }
}
