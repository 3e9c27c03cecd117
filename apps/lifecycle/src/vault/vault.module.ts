import { DynamicModule, Module } from '@nestjs/common';
import { PostgresEventStore } from '@interns/event-store';
import type { ServiceDeps } from '@interns/service-runtime';
import { VaultSealer } from '@interns/vault';
import { LIFECYCLE_SCHEMA } from '../migrations';
import { vaultNatsController } from './vault.nats.controller';
import { VaultService } from './vault.service';

/**
 * The vault's secrets (interface section 18). Lifecycle holds the vault's public key only: it seals what it stores
 * and can never open it. `forRoot` builds the service; Nest builds the controller.
 */
@Module({})
export class VaultModule {
  static forRoot({ dataSource, config, subjects }: Pick<ServiceDeps, 'dataSource' | 'config' | 'subjects'>): DynamicModule {
    return {
      module: VaultModule,
      controllers: [vaultNatsController(subjects.lifecycle)],
      providers: [
        {
          provide: VaultService,
          // The key is loaded (or, in development, generated) before the service listens: a configured key that does
          // not load stops it at start, not at the first write.
          useFactory: async () =>
            new VaultService(
              dataSource,
              // Its own store instance: audit events must not reach the intern projections.
              new PostgresEventStore(dataSource, { schema: LIFECYCLE_SCHEMA }),
              await VaultSealer.load({
                masterKey: config.vaultMasterKey,
                publicKey: config.vaultPublicKey,
                keysDir: config.keysDir,
                nodeEnv: config.nodeEnv,
              }),
            ),
        },
      ],
    };
  }
}
