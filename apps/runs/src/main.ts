import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService, MIGRATE_COMMAND, MigrationTarget, runMigrateCommand, serviceCommand } from '@interns/service-runtime';
import { LEAN_NATS_HANDLERS } from '@interns/messaging';
import { JsonLogger } from '@interns/observability';
import { RUNS_MIGRATIONS } from './migrations';
import { RunsModule } from './runs.module';

const migrationTarget: MigrationTarget = { service: 'runs', schema: 'runs', migrations: RUNS_MIGRATIONS };

// JSON log lines from the first one on (even a configuration error); bootstrapService applies LOG_LEVEL.
JsonLogger.install({ service: 'runs' });

try {
  if (serviceCommand() === MIGRATE_COMMAND) await runMigrateCommand(migrationTarget);
  await bootstrapService({
    ...migrationTarget,
    port: (config) => config.runsPort,
    rootModule: (deps) => RunsModule.forRoot(deps),
    leanHandlers: (app) => app.get(LEAN_NATS_HANDLERS),
  });
} catch (error) {
  new Logger('runs').fatal('failed to start', error);
  process.exit(1);
}
