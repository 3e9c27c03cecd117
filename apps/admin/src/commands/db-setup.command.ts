import type { PlatformConfig } from '@interns/contracts';
import { ensureDatabase, setupServiceRoles, ServiceRolesReport } from '@interns/database';
import { parseFlags } from './command-args';

/** `db-setup` takes no arguments: the owner is MIGRATIONS_DATABASE_URL (else DATABASE_URL), passwords come from the environment. */
export function parseDbSetupArgs(args: string[]): void {
  parseFlags('db-setup', args, {});
}

/**
 * `db-setup`: creates the database when missing, then one role per service reaching only its own schema
 * (`setupServiceRoles`), with the passwords of `<SERVICE>_DATABASE_PASSWORD` where set. Prints which roles and
 * whether each password was set, never a password. Run it as the database owner, before the migrations.
 */
export async function runDbSetup(config: Pick<PlatformConfig, 'migrationsDatabaseUrl' | 'databaseRolePasswords'>): Promise<ServiceRolesReport> {
  await ensureDatabase(config.migrationsDatabaseUrl);
  return setupServiceRoles(config.migrationsDatabaseUrl, { passwords: config.databaseRolePasswords });
}
