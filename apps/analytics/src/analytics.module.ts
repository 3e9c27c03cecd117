import { DynamicModule, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/health';
import type { ServiceDeps } from '@interns/health';
import { analyticsMetaNatsController } from './catalogue/analytics-meta.nats.controller';
import { IntegrationEventsConsumers } from './integration-events/integration-events.consumers';

@Module({})
export class AnalyticsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: AnalyticsModule,
      controllers: [
        pingNatsController('analytics', deps.subjects.analytics.ping),
        analyticsMetaNatsController(deps.subjects.analytics.meta),
      ],
      providers: [IntegrationEventsConsumers],
    };
  }
}
