import { Controller, Get, Param, Patch, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  CreateInternReply,
  CreateInternRequest,
  DomainError,
  GetInternRequest,
  InternList,
  InternView,
  isUuid,
  ListInternsRequest,
  parseCreateInternBody,
  parseIdempotencyKey,
  parseListQuery,
  parseUpdateInternBody,
  UpdateInternRequest,
} from '@interns/contracts';
import { jsonBodyOf } from './body-rules';
import { INTERN_ID_PARAM } from './intern-routes';
import { LifecycleClient } from './lifecycle.client';

type RawQuery = Record<string, string | string[] | undefined>;

/**
 * HTTP adapter of the lifecycle routes (CONTRACT section 4). Checks 1-5 ran in the onRequest hook;
 * here: body rules, then the intern id (a non-uuid is 404, after the body rules), then lifecycle decides.
 */
@Controller('api/v1/interns')
export class InternsHttpController {
  constructor(private readonly lifecycle: LifecycleClient) {}

  @Get()
  list(@Req() request: FastifyRequest): Promise<InternList> {
    // Fastify's query parser has decoded `%2C` already, so `status=running%2Cstopped` splits like a comma.
    const query = parseListQuery(request.query as RawQuery);
    const payload: ListInternsRequest = { context: this.lifecycle.contextOf(request), ...query };
    return this.lifecycle.request<InternList>(this.lifecycle.subjects.listInterns, request, payload);
  }

  @Post()
  async create(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<InternView> {
    const body = parseCreateInternBody(jsonBodyOf(request));
    const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
    const payload: CreateInternRequest = { context: this.lifecycle.contextOf(request), body, idempotencyKey };
    const answer = await this.lifecycle.request<CreateInternReply>(this.lifecycle.subjects.createIntern, request, payload);
    reply.code(answer.replayed ? 200 : 201);
    return answer.intern;
  }

  @Get(`:${INTERN_ID_PARAM}`)
  get(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<InternView> {
    const payload: GetInternRequest = { context: this.lifecycle.contextOf(request), internId: visibleId(internId) };
    return this.lifecycle.request<InternView>(this.lifecycle.subjects.getIntern, request, payload);
  }

  @Patch(`:${INTERN_ID_PARAM}`)
  update(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<InternView> {
    const body = parseUpdateInternBody(jsonBodyOf(request));
    const payload: UpdateInternRequest = {
      context: this.lifecycle.contextOf(request),
      internId: visibleId(internId),
      body,
    };
    return this.lifecycle.request<InternView>(this.lifecycle.subjects.updateIntern, request, payload);
  }
}

/** Check 7, the part the gateway can see: an id that is not a uuid names no intern. */
function visibleId(internId: string): string {
  if (!isUuid(internId)) throw new DomainError('not_found', 'intern not found');
  return internId.toLowerCase();
}
