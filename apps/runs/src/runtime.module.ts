import { DynamicModule, Module } from '@nestjs/common';
import type { Subjects } from '@interns/contracts';
import { RunHost } from './runs/run-host';
import { TerminalHost } from './terminals/terminal-host';
import type { RuntimeDriver } from './runtime/runtime-driver';
import { RUNTIME_DRIVER } from './runtime/runtime-driver';
import { runtimeNatsController } from './runtime.nats.controller';

/**
 * The intern runtimes this service hosts (local mode), reached by lifecycle over NATS. It sits above runtime/,
 * runs/ and terminals/ because its controller reaches all three (ending runs and terminals with the runtime).
 */
@Module({})
export class RuntimeModule {
  static forRoot(options: { subjects: Subjects; driver: RuntimeDriver; host: RunHost; terminals: TerminalHost }): DynamicModule {
    return {
      module: RuntimeModule,
      controllers: [runtimeNatsController(options.subjects.runs)],
      providers: [
        { provide: RUNTIME_DRIVER, useValue: options.driver },
        { provide: RunHost, useValue: options.host },
        { provide: TerminalHost, useValue: options.terminals },
      ],
      exports: [RUNTIME_DRIVER],
    };
  }
}
