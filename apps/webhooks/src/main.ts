import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService, MIGRATE_COMMAND, MigrationTarget, runMigrateCommand, serviceCommand } from '@interns/service-runtime';
import { JsonLogger } from '@interns/observability';
import { WEBHOOKS_MIGRATIONS } from './migrations';
import { WebhooksModule } from './webhooks.module';

const migrationTarget: MigrationTarget = { service: 'webhooks', schema: 'webhooks', migrations: WEBHOOKS_MIGRATIONS };

// JSON log lines from the first one on (even a configuration error); bootstrapService applies LOG_LEVEL.
JsonLogger.install({ service: 'webhooks' });

try {
  if (serviceCommand() === MIGRATE_COMMAND) await runMigrateCommand(migrationTarget);
  await bootstrapService({
    ...migrationTarget,
    port: (config) => config.webhooksPort,
    rootModule: (deps) => WebhooksModule.forRoot(deps),
  });
} catch (error) {
  new Logger('webhooks').fatal('failed to start', error);
  process.exit(1);
}
