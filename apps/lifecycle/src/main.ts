import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService } from '@interns/health';
import { InternsModule } from './interns/interns.module';
import { LIFECYCLE_SCHEMA, lifecycleMigrations } from './migrations';

try {
  await bootstrapService({
    service: 'lifecycle',
    schema: LIFECYCLE_SCHEMA,
    migrations: lifecycleMigrations,
    port: (config) => config.lifecyclePort,
    rootModule: (deps) => InternsModule.forRoot(deps),
  });
} catch (error) {
  new Logger('lifecycle').error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
}
