import { randomUUID } from 'node:crypto';
import { DynamicModule, Logger, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/service-runtime';
import type { ServiceDeps } from '@interns/service-runtime';
import {
  AddressPolicy,
  EgressCa,
  EgressProxy,
  parseEgressAllowPrivate,
  parseEgressPorts,
  parseEgressResolve,
  resolverWith,
} from '@interns/egress-proxy';
import { VaultOpener } from '@interns/vault';
import { egressNatsController } from './egress.nats.controller';
import { EgressContextClient } from './listeners/egress-context.client';
import { EgressListeners } from './listeners/egress-listeners';
import { platformEndpoints } from './listeners/platform-endpoints';
import { SecretPlaceholders } from './listeners/secret-placeholders';
import { EgressLogService } from './log/egress-log.service';
import { EgressLogStore } from './log/egress-log.store';
import { EgressLogSweeper } from './log/egress-log.sweeper';

/** Beyond SHELL_TIMEOUT_MS: the command's own deadline ends it first; this only catches a runs replica that died. */
const LISTENER_LIFETIME_MARGIN_MS = 60_000;

/** Closes every listener (and each connection it holds), then waits for the last log entries, when the app stops. */
class EgressShutdown {
  constructor(
    private readonly listeners: EgressListeners,
    private readonly log: EgressLogService,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.listeners.closeAll();
    await this.log.flush();
  }
}

/**
 * The egress service (interface section 19): the proxy a sandboxed command's requests leave through, one listener per
 * command, and the egress log. The only process holding VAULT_MASTER_KEY: secret values are opened here, for the
 * request they are released to, and nowhere else. `forRoot` is its composition root.
 */
@Module({})
export class EgressModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    const { config, dataSource, nc, subjects } = deps;
    const logger = new Logger('Egress');
    const instanceId = randomUUID();
    const services = (async () => {
      // A setting that does not parse, or a development setting in production, stops the start with its reason.
      const ports = parseEgressPorts(config.egressPorts ?? undefined);
      const resolve = parseEgressResolve(config.egressResolve ?? undefined, config.nodeEnv);
      const allowPrivate = parseEgressAllowPrivate(config.egressAllowPrivate ?? undefined, config.nodeEnv);
      if (allowPrivate) logger.warn('EGRESS_ALLOW_PRIVATE=true: interns may reach private and loopback addresses (development and tests only)');
      const [ca, opener, placeholders, store, endpoints] = await Promise.all([
        EgressCa.loadOrCreate(config.keysDir),
        VaultOpener.load({ masterKey: config.vaultMasterKey, keysDir: config.keysDir, nodeEnv: config.nodeEnv }),
        SecretPlaceholders.open(dataSource),
        EgressLogStore.open(dataSource),
        platformEndpoints(config),
      ]);
      const log = new EgressLogService(store, nc, subjects.lifecycle);
      const proxy = new EgressProxy({
        ca,
        ports,
        addressPolicy: new AddressPolicy({ allowPrivate, platformEndpoints: endpoints }),
        resolver: resolverWith(resolve),
        bytesPerRun: config.egressBytesPerRun,
        connectionsPerIntern: config.egressConnectionsPerIntern,
        onLog: (entry, context) => log.record(entry, context),
      });
      const listeners = new EgressListeners({
        proxy,
        contexts: new EgressContextClient(nc, subjects.lifecycle),
        opener,
        placeholders,
        socketDir: config.egressSocketDir,
        instanceId,
        caCertificate: ca.certificatePem,
        maxLifetimeMs: config.shellTimeoutMs + LISTENER_LIFETIME_MARGIN_MS,
      });
      await listeners.prepare();
      return { listeners, log, store };
    })();
    return {
      module: EgressModule,
      controllers: [pingNatsController('egress', subjects.egress.ping), egressNatsController(subjects.egress, instanceId)],
      providers: [
        { provide: EgressListeners, useFactory: async () => (await services).listeners },
        { provide: EgressLogService, useFactory: async () => (await services).log },
        { provide: EgressLogSweeper, useFactory: async () => new EgressLogSweeper((await services).store, config.egressLogRetentionMs) },
        {
          provide: EgressShutdown,
          inject: [EgressListeners, EgressLogService],
          useFactory: (listeners: EgressListeners, log: EgressLogService) => new EgressShutdown(listeners, log),
        },
      ],
    };
  }
}
