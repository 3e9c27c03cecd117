import { DynamicModule, Module } from '@nestjs/common';
import { DaemonSigningKey } from '@interns/daemon-signing';
import { PostgresEventStore } from '@interns/event-store';
import type { ServiceDeps } from '@interns/health';
import { LIFECYCLE_SCHEMA } from '../migrations';
import { DaemonAccessService } from './daemon-access.service';
import { DaemonAuditLog } from './daemon-audit.log';
import { DaemonSigningService } from './daemon-signing.service';
import { DaemonNatsController } from './daemon.nats.controller';

/**
 * Daemon access, request signing and their audit (CONTRACT section 8). The tokens' revocation on suspend and
 * delete is an inline projection of the intern store (`projectDaemonTokenRevocation`, registered there).
 */
@Module({})
export class DaemonModule {
  static forRoot({ dataSource, config }: Pick<ServiceDeps, 'dataSource' | 'config'>): DynamicModule {
    return {
      module: DaemonModule,
      controllers: [DaemonNatsController],
      providers: [
        {
          provide: DaemonAuditLog,
          // Its own store instance: audit events must not reach the intern projections.
          useFactory: () => new DaemonAuditLog(dataSource, new PostgresEventStore(dataSource, { schema: LIFECYCLE_SCHEMA })),
        },
        {
          provide: DaemonSigningKey,
          // A configured key that does not load stops the service at start, not at the first signing.
          useFactory: () => DaemonSigningKey.load({ pem: config.daemonSigningKey, keysDir: config.keysDir, legacyDataDir: config.dataDir }),
        },
        {
          provide: DaemonAccessService,
          useFactory: (audit: DaemonAuditLog) => new DaemonAccessService(dataSource, audit, config.daemonTokenTtlMs),
          inject: [DaemonAuditLog],
        },
        {
          provide: DaemonSigningService,
          useFactory: (audit: DaemonAuditLog, key: DaemonSigningKey) => new DaemonSigningService(dataSource, audit, key),
          inject: [DaemonAuditLog, DaemonSigningKey],
        },
      ],
    };
  }
}
