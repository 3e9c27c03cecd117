// catalogue/: what analytics can be asked about, as `GET /analytics/meta` answers it.
import { Controller, Logger, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ANALYTICS_CATALOGUE } from '@interns/contracts';
import type { AnalyticsMetaReply, AnalyticsMetaRequest } from '@interns/contracts';

/**
 * `analytics.qry.meta`: the catalogue of dimensions, granularities, metrics and operators. The gateway has
 * already checked the caller (management keys only); the catalogue is what this service can query, so it
 * is answered here rather than by the gateway.
 */
export function analyticsMetaNatsController(subject: string): Type<unknown> {
  @Controller()
  class AnalyticsMetaNatsController {
    private readonly logger = new Logger('AnalyticsMeta');

    @MessagePattern(subject)
    meta(@Payload() request: AnalyticsMetaRequest): AnalyticsMetaReply {
      this.logger.debug(`meta for organization ${request?.organizationId}`, { correlation_id: request?.correlationId });
      return { data: ANALYTICS_CATALOGUE };
    }
  }
  return AnalyticsMetaNatsController;
}
