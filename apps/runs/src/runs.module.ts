import { DynamicModule, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/health';
import type { ServiceDeps } from '@interns/health';

@Module({})
export class RunsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: RunsModule,
      controllers: [pingNatsController('runs', deps.subjects.runs.ping)],
    };
  }
}
