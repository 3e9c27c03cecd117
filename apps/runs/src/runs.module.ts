import { DynamicModule, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/health';
import type { ServiceDeps } from '@interns/health';
import { RuntimeModule } from './runtime/runtime.module';

@Module({})
export class RunsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    return {
      module: RunsModule,
      imports: [RuntimeModule.forRoot(deps)],
      controllers: [pingNatsController('runs', deps.subjects.runs.ping)],
    };
  }
}
