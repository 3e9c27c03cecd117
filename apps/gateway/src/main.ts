import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { loadConfig } from '@interns/contracts';
import { MIGRATE_COMMAND, MigrationTarget, runMigrateCommand, serviceCommand } from '@interns/service-runtime';
import { IDENTITY_SCHEMA, identityMigrations } from '@interns/identity';
import { JsonLogger } from '@interns/observability';
import { startGateway } from './gateway.bootstrap';

// JSON log lines from the first one on (even a configuration error); startGateway applies LOG_LEVEL.
JsonLogger.install({ service: 'gateway' });
const gatewayLogger = new Logger('gateway');

/** A close that hangs (a stuck connection) must not keep the process from stopping. */
const SHUTDOWN_GRACE_MS = 15000;

/** The gateway owns the identity schema (`main.js migrate` applies it). */
const identityMigrationTarget: MigrationTarget = { service: 'gateway', schema: IDENTITY_SCHEMA, migrations: identityMigrations };

async function main(): Promise<void> {
  if (serviceCommand() === MIGRATE_COMMAND) await runMigrateCommand(identityMigrationTarget);
  const config = loadConfig(process.env);
  const gateway = await startGateway(config);
  // Not "ready" nor "listening": the API answers once the services behind it are up, which /health/ready and
  // `npm start`'s ready lines tell.
  gatewayLogger.log(`gateway started (HTTP port ${gateway.port}, NATS prefix "${config.natsPrefix}")`);

  const shutdown = (signal: NodeJS.Signals) => {
    gatewayLogger.log(`${signal}: shutting down`);
    setTimeout(() => {
      gatewayLogger.error(`shutdown took longer than ${SHUTDOWN_GRACE_MS} ms; exiting`);
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    gateway.close().then(
      () => process.exit(0),
      (error: unknown) => {
        gatewayLogger.error('shutdown failed', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((error: unknown) => {
  gatewayLogger.fatal('gateway failed to start', error);
  process.exit(1);
});
