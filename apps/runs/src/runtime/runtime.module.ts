import { DynamicModule, Module } from '@nestjs/common';
import type { ServiceDeps } from '@interns/health';
import { LocalRuntimeDriver } from './local-runtime.driver';
import { ModelCatalog } from './model-catalog';
import { RUNTIME_DRIVER } from './runtime-driver';
import { runtimeNatsController } from './runtime.nats.controller';

/** The intern runtimes this service hosts (local mode), reached by lifecycle over NATS. */
@Module({})
export class RuntimeModule {
  static forRoot({ config, subjects }: ServiceDeps): DynamicModule {
    return {
      module: RuntimeModule,
      controllers: [runtimeNatsController(subjects.runs)],
      providers: [
        {
          provide: RUNTIME_DRIVER,
          useFactory: () =>
            new LocalRuntimeDriver({
              dataDir: config.dataDir,
              archiveDir: config.archiveDir,
              catalog: new ModelCatalog({
                defaultModel: config.defaultModel,
                openAiCompatibleBaseUrl: config.modelApiBaseUrl,
              }),
            }),
        },
      ],
      exports: [RUNTIME_DRIVER],
    };
  }
}
