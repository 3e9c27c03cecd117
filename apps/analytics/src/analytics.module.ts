import { DynamicModule, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/service-runtime';
import type { ServiceDeps } from '@interns/service-runtime';
import { analyticsMetaNatsController } from './catalogue/analytics-meta.nats.controller';
import { IntegrationEventsConsumers } from './integration-events/integration-events.consumers';
import { AnalyticsQueries } from './query/analytics-queries';
import { analyticsQueryNatsController } from './query/analytics-query.nats.controller';

/**
 * The analytics service: its NATS queries (ping, the catalogue, the query of CONTRACT section 14) and the
 * consumers of the integration event streams. `forRoot` builds the query service and the consumers
 * (docs/architecture.md, "Dependency injection"); Nest starts and stops them with the app.
 */
@Module({})
export class AnalyticsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: AnalyticsModule,
      controllers: [
        pingNatsController('analytics', deps.subjects.analytics.ping),
        analyticsMetaNatsController(deps.subjects.analytics.meta),
        analyticsQueryNatsController(deps.subjects.analytics.query),
      ],
      providers: [
        { provide: IntegrationEventsConsumers, useValue: new IntegrationEventsConsumers(deps) },
        { provide: AnalyticsQueries, useValue: new AnalyticsQueries(deps.dataSource) },
      ],
    };
  }
}
