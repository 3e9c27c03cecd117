import { DynamicModule, Module } from '@nestjs/common';
import type { ServiceDeps } from '@interns/health';
import { pingNatsController } from './ping/ping.nats.controller';

@Module({})
export class RunsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: RunsModule,
      controllers: [pingNatsController(deps.subjects.runs.ping)],
    };
  }
}
