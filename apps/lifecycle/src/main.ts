import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService, MIGRATE_COMMAND, MigrationTarget, runMigrateCommand, serviceCommand } from '@interns/service-runtime';
import { LEAN_NATS_HANDLERS } from '@interns/messaging';
import { JsonLogger } from '@interns/observability';
import { LifecycleModule } from './lifecycle.module';
import { LIFECYCLE_SCHEMA, lifecycleMigrations } from './migrations';

const migrationTarget: MigrationTarget = { service: 'lifecycle', schema: LIFECYCLE_SCHEMA, migrations: lifecycleMigrations };

// JSON log lines from the first one on (even a configuration error); bootstrapService applies LOG_LEVEL.
JsonLogger.install({ service: 'lifecycle' });

try {
  if (serviceCommand() === MIGRATE_COMMAND) await runMigrateCommand(migrationTarget);
  await bootstrapService({
    ...migrationTarget,
    port: (config) => config.lifecyclePort,
    rootModule: (deps) => LifecycleModule.forRoot(deps),
    leanHandlers: (app) => app.get(LEAN_NATS_HANDLERS),
  });
} catch (error) {
  new Logger('lifecycle').fatal('failed to start', error);
  process.exit(1);
}
