import { DynamicModule, Module } from '@nestjs/common';
import { DaemonSigningKeyring } from '@interns/daemon-signing';
import { PostgresEventStore } from '@interns/event-store';
import type { ServiceDeps } from '@interns/service-runtime';
import { LIFECYCLE_SCHEMA } from '../migrations';
import { DaemonAccessService } from './daemon-access.service';
import { DaemonAuditLog } from './daemon-audit.log';
import { DaemonSigningService } from './daemon-signing.service';
import { daemonNatsController } from './daemon.nats.controller';
import { DoorService } from './door.service';

/**
 * Daemon access, request signing and their audit (CONTRACT section 8). The tokens' revocation on suspend and
 * delete is an inline projection of the intern store (`projectDaemonTokenRevocation`, registered there).
 * The door's nonce claims are served here too; its hostname lookup is a lean handler of the root module, which
 * builds the DoorService both use. `forRoot` builds the services (docs/architecture.md, "Dependency injection");
 * Nest builds the controller.
 */
@Module({})
export class DaemonModule {
  static forRoot(
    { dataSource, config, subjects }: Pick<ServiceDeps, 'dataSource' | 'config' | 'subjects'>,
    door: DoorService,
  ): DynamicModule {
    // Its own store instance: audit events must not reach the intern projections.
    const audit = new DaemonAuditLog(dataSource, new PostgresEventStore(dataSource, { schema: LIFECYCLE_SCHEMA }));
    return {
      module: DaemonModule,
      controllers: [daemonNatsController(subjects.lifecycle)],
      providers: [
        { provide: DaemonAuditLog, useValue: audit },
        { provide: DoorService, useValue: door },
        {
          provide: DaemonAccessService,
          useValue: new DaemonAccessService(dataSource, audit, { tokenTtlMs: config.daemonTokenTtlMs, internOrigin: config.internOrigin }),
        },
        {
          provide: DaemonSigningService,
          // The keys are read (or the current one generated) before the service listens: a configured key that
          // does not load stops it at start, not at the first signing.
          useFactory: async () =>
            new DaemonSigningService(
              dataSource,
              audit,
              await DaemonSigningKeyring.load({
                pem: config.daemonSigningKey,
                previousPem: config.daemonSigningKeyPrevious,
                keysDir: config.keysDir,
                legacyDataDir: config.dataDir,
              }),
            ),
        },
      ],
    };
  }
}
