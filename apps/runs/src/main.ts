import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService } from '@interns/health';
import { RUNS_MIGRATIONS } from './migrations';
import { RunsModule } from './runs.module';

try {
  await bootstrapService({
    service: 'runs',
    schema: 'runs',
    migrations: RUNS_MIGRATIONS,
    port: (config) => config.runsPort,
    rootModule: (deps) => RunsModule.forRoot(deps),
  });
} catch (error) {
  new Logger('runs').error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
}
