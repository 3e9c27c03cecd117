import { Controller, Inject, Logger, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { AnalyticsQueryReply, AnalyticsQueryRequest } from '@interns/contracts';
import { AnalyticsQueries } from './analytics-queries';

/**
 * `analytics.qry.query` (CONTRACT section 14): the gateway has checked the caller (management keys only) and the
 * body; the query is checked again here before any SQL is built (a refusal travels back as `invalid_body`).
 */
export function analyticsQueryNatsController(subject: string): Type<unknown> {
  @Controller()
  class AnalyticsQueryNatsController {
    private readonly logger = new Logger('AnalyticsQuery');

    constructor(@Inject(AnalyticsQueries) private readonly queries: AnalyticsQueries) {}

    @MessagePattern(subject)
    async query(@Payload() request: AnalyticsQueryRequest): Promise<AnalyticsQueryReply> {
      const reply = await this.queries.answer(request);
      const { row_count: rows, query_time_ms: ms } = reply.data.metadata;
      this.logger.debug(`query for organization ${request?.organizationId}: ${rows} rows in ${ms} ms`, {
        correlation_id: request?.correlationId,
      });
      return reply;
    }
  }
  return AnalyticsQueryNatsController;
}
