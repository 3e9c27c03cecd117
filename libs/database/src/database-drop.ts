import pg from 'pg';
import { SERVICE_NAMES } from '@interns/contracts';
import { databaseNameOf, dropServiceRoles, serviceRoleName } from './database-roles';

/** Connecting, and each statement (a DROP DATABASE included), give up after this long. */
const DROP_TIMEOUT_MS = 30_000;

/** What a database URL names on its cluster, as `admin reset` shows it before it drops anything. */
export interface DatabaseFootprint {
  database: string;
  exists: boolean;
  /** `admin db-setup`'s roles of this database that exist (cluster-wide, so they outlive the database). */
  roles: string[];
  /** Who else is connected to it (application names, `?` when unnamed): a database in use is not dropped. */
  sessions: string[];
}

/** The `postgres` maintenance database of the cluster `ownerUrl` names, where a database can be created or dropped. */
function maintenanceClient(ownerUrl: string): pg.Client {
  const url = new URL(ownerUrl);
  url.pathname = '/postgres';
  return new pg.Client({
    connectionString: url.toString(),
    application_name: 'admin-reset',
    connectionTimeoutMillis: DROP_TIMEOUT_MS,
    query_timeout: DROP_TIMEOUT_MS,
  });
}

async function withMaintenance<T>(ownerUrl: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = maintenanceClient(ownerUrl);
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** The database `ownerUrl` names: whether it exists, its service roles and who is connected to it. */
export async function databaseFootprint(ownerUrl: string): Promise<DatabaseFootprint> {
  const database = databaseNameOf(ownerUrl);
  const roleNames = SERVICE_NAMES.map((service) => serviceRoleName(database, service));
  return withMaintenance(ownerUrl, async (client) => {
    const exists = ((await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount ?? 0) > 0;
    const roles = (await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname', [roleNames])).rows;
    const sessions = (
      await client.query<{ application_name: string }>(
        `SELECT application_name FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
          ORDER BY application_name`,
        [database],
      )
    ).rows;
    return {
      database,
      exists,
      roles: roles.map((row) => row.rolname),
      sessions: sessions.map((row) => row.application_name || '?'),
    };
  });
}

/**
 * Drops the database `ownerUrl` names, then its service roles. Never forced: a database someone is connected to (a
 * running `npm start`) makes PostgreSQL refuse, and nothing is dropped. Answers whether the database existed.
 */
export async function dropDatabaseAndRoles(ownerUrl: string): Promise<{ database: boolean; roles: string[] }> {
  const before = await databaseFootprint(ownerUrl);
  if (before.exists) {
    await withMaintenance(ownerUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${before.database}"`));
  }
  // With the database gone the roles own nothing left, and can go.
  await dropServiceRoles(ownerUrl, before.database);
  return { database: before.exists, roles: before.roles };
}
