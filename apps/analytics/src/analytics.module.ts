import { DynamicModule, Module } from '@nestjs/common';
import type { ServiceDeps } from '@interns/health';
import { pingNatsController } from './ping/ping.nats.controller';

@Module({})
export class AnalyticsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: AnalyticsModule,
      controllers: [pingNatsController(deps.subjects.analytics.ping)],
    };
  }
}
