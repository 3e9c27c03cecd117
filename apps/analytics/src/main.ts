import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { bootstrapService } from '@interns/health';
import { ANALYTICS_MIGRATIONS } from './migrations';
import { AnalyticsModule } from './analytics.module';

try {
  await bootstrapService({
    service: 'analytics',
    schema: 'analytics',
    migrations: ANALYTICS_MIGRATIONS,
    port: (config) => config.analyticsPort,
    rootModule: (deps) => AnalyticsModule.forRoot(deps),
  });
} catch (error) {
  new Logger('analytics').error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
}
