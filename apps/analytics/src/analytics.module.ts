import { DynamicModule, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/health';
import type { ServiceDeps } from '@interns/health';

@Module({})
export class AnalyticsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: AnalyticsModule,
      controllers: [pingNatsController('analytics', deps.subjects.analytics.ping)],
    };
  }
}
