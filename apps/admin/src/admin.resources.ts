import { connect, NatsConnection } from '@nats-io/transport-node';
import { natsSecurityOptions } from '@interns/messaging';
import type { DataSource } from 'typeorm';
import type { PlatformConfig } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { IDENTITY_SCHEMA, identityMigrations, IdentityStore, LocalOidcIssuer } from '@interns/identity';
import type { DaemonTokenRevoker } from './commands/apply.command';
import type { DaemonAuditLookup } from './commands/audit.command';
import type { ChatappInstallNotifier } from './commands/chatapp-installed.command';
import type { InternOwnerLookup } from './commands/intern-key.command';
import { lifecycleAuditLookup } from './lifecycle-audit.lookup';
import { lifecycleChatappNotifier } from './lifecycle-chatapp.notifier';
import { lifecycleDaemonTokenRevoker } from './lifecycle-daemon-tokens.revoker';
import { lifecycleOwnerLookup } from './lifecycle-owner.lookup';

const NATS_CONNECT_TIMEOUT_MS = 5000;

/**
 * What a command may need, opened on first use and all closed by close(), so a run holds no more
 * connections than its command uses and the process exits as soon as the command is done.
 */
export class AdminResources {
  private dataSource: Promise<DataSource> | null = null;
  private natsOpened: Promise<NatsConnection> | null = null;

  constructor(private readonly config: PlatformConfig) {}

  identityStore = async (): Promise<IdentityStore> => {
    this.dataSource ??= openDatabase({
      url: this.config.databaseUrl,
      migrationsUrl: this.config.migrationsDatabaseUrl,
      schema: IDENTITY_SCHEMA,
      migrations: identityMigrations,
      applicationName: 'admin',
      poolSize: 2,
      migrate: true,
    });
    return new IdentityStore(await this.dataSource);
  };

  localIssuer(): Promise<LocalOidcIssuer> {
    return LocalOidcIssuer.open({
      keysDir: this.config.keysDir,
      legacyDataDir: this.config.dataDir,
      maxTokenAgeSeconds: this.config.oidcMaxTokenAgeS,
    });
  }

  internOwnerLookup(): InternOwnerLookup {
    return async (internId) => lifecycleOwnerLookup(await this.nats(), this.config.natsPrefix)(internId);
  }

  chatappInstallNotifier(): ChatappInstallNotifier {
    return async (workspaceId) =>
      lifecycleChatappNotifier(await this.nats(), this.config.natsPrefix)(workspaceId);
  }

  daemonTokenRevoker(): DaemonTokenRevoker {
    return async (memberIds, organizationIds) =>
      lifecycleDaemonTokenRevoker(await this.nats(), this.config.natsPrefix)(memberIds, organizationIds);
  }

  daemonAuditLookup(): DaemonAuditLookup {
    return async (internId) => lifecycleAuditLookup(await this.nats(), this.config.natsPrefix)(internId);
  }

  /** The admin's own NATS connection (credentials of the `admin` user when NATS_CREDS_DIR is set), opened once. */
  nats = (): Promise<NatsConnection> => {
    // Not connectNats(): the services wait for the broker forever, a one-shot command must fail fast.
    // A missing credentials file is reported like an unreachable broker (in the promise, not thrown here).
    this.natsOpened ??= Promise.resolve()
      .then(() =>
        connect({
          servers: this.config.natsUrl,
          name: 'admin',
          timeout: NATS_CONNECT_TIMEOUT_MS,
          maxReconnectAttempts: 0,
          ...natsSecurityOptions('admin', this.config),
        }),
      )
      .catch((error: Error) => {
        throw new Error(`cannot connect to NATS at ${this.config.natsUrl}: ${error.message}`, { cause: error });
      });
    return this.natsOpened;
  };

  async close(): Promise<void> {
    const closing: Promise<unknown>[] = [];
    if (this.natsOpened) closing.push(this.natsOpened.then((nc) => nc.close()));
    if (this.dataSource) closing.push(this.dataSource.then((ds) => ds.destroy()));
    this.natsOpened = null;
    this.dataSource = null;
    // A resource that never opened has nothing to close; its error was already reported.
    await Promise.allSettled(closing);
  }
}
