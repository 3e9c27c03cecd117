import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService, MIGRATE_COMMAND, MigrationTarget, runMigrateCommand, serviceCommand } from '@interns/service-runtime';
import { JsonLogger } from '@interns/observability';
import { EGRESS_MIGRATIONS } from './migrations';
import { EgressModule } from './egress.module';

const migrationTarget: MigrationTarget = { service: 'egress', schema: 'egress', migrations: EGRESS_MIGRATIONS };

// JSON log lines from the first one on (even a configuration error); bootstrapService applies LOG_LEVEL.
JsonLogger.install({ service: 'egress' });

try {
  if (serviceCommand() === MIGRATE_COMMAND) await runMigrateCommand(migrationTarget);
  await bootstrapService({
    ...migrationTarget,
    port: (config) => config.egressPort,
    rootModule: (deps) => EgressModule.forRoot(deps),
  });
} catch (error) {
  new Logger('egress').fatal('failed to start', error);
  process.exit(1);
}
