import { Controller, Get, Inject, Param, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { EgressLogPage, EgressLogRequest, parseEgressLogQuery } from '@interns/contracts';
import { INTERN_ID_PARAM, visibleId } from '../interns/intern-routes';
import { ServiceClient } from '../service.client';

type RawQuery = Record<string, string | string[] | undefined>;

/**
 * HTTP adapter of an intern's egress log (interface section 19). An intern route: the admission hook ran checks 1-5,
 * and whoever may read the intern's egress policy may read its log (its own intern key included). Here the query
 * rules, then the intern id; the egress service asks lifecycle whether the caller sees the intern, and judges the
 * cursor it issued.
 */
@Controller('interns')
export class EgressLogHttpController {
  constructor(@Inject(ServiceClient) private readonly services: ServiceClient) {}

  @Get(`:${INTERN_ID_PARAM}/egress/log`)
  list(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<EgressLogPage> {
    const query = parseEgressLogQuery(request.query as RawQuery);
    const payload: EgressLogRequest = { context: this.services.contextOf(request), internId: visibleId(internId), ...query };
    return this.services.request<EgressLogPage>(this.services.subjects.egress.log, request, payload);
  }
}
