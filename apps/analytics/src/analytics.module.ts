import { DynamicModule, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/service-runtime';
import type { ServiceDeps } from '@interns/service-runtime';
import { analyticsMetaNatsController } from './catalogue/analytics-meta.nats.controller';
import { IntegrationEventsConsumers } from './integration-events/integration-events.consumers';

/**
 * The analytics service: its NATS queries and the consumers of the integration event streams. `forRoot` builds
 * the consumers (docs/architecture.md, "Dependency injection"); Nest starts and stops them with the app.
 */
@Module({})
export class AnalyticsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: AnalyticsModule,
      controllers: [
        pingNatsController('analytics', deps.subjects.analytics.ping),
        analyticsMetaNatsController(deps.subjects.analytics.meta),
      ],
      providers: [{ provide: IntegrationEventsConsumers, useValue: new IntegrationEventsConsumers(deps) }],
    };
  }
}
