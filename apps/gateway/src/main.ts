import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { loadConfig } from '@interns/contracts';
import { logLevelsFrom, startGateway } from './gateway.bootstrap';

const gatewayLogger = new Logger('gateway');

/** A close that hangs (a stuck connection) must not keep the process from stopping. */
const SHUTDOWN_GRACE_MS = 15000;

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const gateway = await startGateway(config, { logLevels: logLevelsFrom(process.env.LOG_LEVEL) });
  gatewayLogger.log(`gateway listening on http://0.0.0.0:${gateway.port} (NATS prefix "${config.natsPrefix}")`);

  const shutdown = (signal: NodeJS.Signals) => {
    gatewayLogger.log(`${signal}: shutting down`);
    setTimeout(() => {
      gatewayLogger.error(`shutdown took longer than ${SHUTDOWN_GRACE_MS} ms; exiting`);
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    gateway.close().then(
      () => process.exit(0),
      (error: unknown) => {
        gatewayLogger.error(`shutdown failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((error: unknown) => {
  gatewayLogger.error(`gateway failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
