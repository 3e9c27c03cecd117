import { Controller, Get, Inject, Param, Put, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { EgressPolicy, GetEgressPolicyRequest, parseEgressPolicy, PutEgressPolicyRequest } from '@interns/contracts';
import { jsonBodyOf } from '../http/body-rules';
import { INTERN_ID_PARAM, visibleId } from '../interns/intern-routes';
import { ServiceClient } from '../service.client';

const EGRESS = `:${INTERN_ID_PARAM}/egress`;

/**
 * HTTP adapter of an intern's egress policy (interface section 19). These are intern routes: the admission hook ran
 * checks 1-5 (the put is a lifecycle write) and refused intern keys on the put; here the body rules and the entry
 * rules, then the intern id (a non-uuid is 404, after the body rules, as on every intern route); lifecycle decides.
 */
@Controller('interns')
export class EgressPolicyHttpController {
  constructor(@Inject(ServiceClient) private readonly services: ServiceClient) {}

  @Get(EGRESS)
  get(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<EgressPolicy> {
    const payload: GetEgressPolicyRequest = { context: this.services.contextOf(request), internId: visibleId(internId) };
    return this.services.request<EgressPolicy>(this.services.subjects.lifecycle.egressPolicy, request, payload);
  }

  @Put(EGRESS)
  put(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<EgressPolicy> {
    const body = parseEgressPolicy(jsonBodyOf(request));
    const payload: PutEgressPolicyRequest = { context: this.services.contextOf(request), internId: visibleId(internId), body };
    return this.services.request<EgressPolicy>(this.services.subjects.lifecycle.putEgressPolicy, request, payload);
  }
}
