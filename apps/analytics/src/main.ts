import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService, MIGRATE_COMMAND, MigrationTarget, runMigrateCommand, serviceCommand } from '@interns/service-runtime';
import { JsonLogger } from '@interns/observability';
import { ANALYTICS_MIGRATIONS } from './migrations';
import { AnalyticsModule } from './analytics.module';

const migrationTarget: MigrationTarget = { service: 'analytics', schema: 'analytics', migrations: ANALYTICS_MIGRATIONS };

// JSON log lines from the first one on (even a configuration error); bootstrapService applies LOG_LEVEL.
JsonLogger.install({ service: 'analytics' });

try {
  if (serviceCommand() === MIGRATE_COMMAND) await runMigrateCommand(migrationTarget);
  await bootstrapService({
    ...migrationTarget,
    port: (config) => config.analyticsPort,
    rootModule: (deps) => AnalyticsModule.forRoot(deps),
  });
} catch (error) {
  new Logger('analytics').fatal('failed to start', error);
  process.exit(1);
}
