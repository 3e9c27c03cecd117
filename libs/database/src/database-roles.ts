import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';
import { SERVICE_NAMES, type ServiceName } from '@interns/contracts';
import { PG_ERROR_CODES, pgErrorFields } from './pg-errors';

/**
 * The one schema each service owns, and the only one its role may reach. No service reads another's schema:
 * what crosses services goes over NATS (the gateway's analytics queries, admin's lifecycle lookups).
 */
export const SERVICE_SCHEMAS: Readonly<Record<ServiceName, string>> = {
  gateway: 'identity',
  lifecycle: 'lifecycle',
  runs: 'runs',
  analytics: 'analytics',
  webhooks: 'webhooks',
  egress: 'egress',
};

/**
 * What a service's role may do on its own schema's tables: rows only. No TRUNCATE (only an operator's read-model
 * rebuild truncates, as the owner), no REFERENCES or TRIGGER (DDL is the migrations' job).
 */
const TABLE_PRIVILEGES = 'SELECT, INSERT, UPDATE, DELETE';
/** nextval and currval of the `bigserial` and identity columns; setval (UPDATE) is never used. */
const SEQUENCE_PRIVILEGES = 'USAGE, SELECT';

/** PostgreSQL's NAMEDATALEN - 1: a longer name would be cut silently, and two databases' roles could collide. */
const MAX_IDENTIFIER_LENGTH = 63;
const DATABASE_NAME = /^[A-Za-z0-9_]+$/;
/** Serializes db-setup runs on one database: concurrent GRANTs on one object fail with "tuple concurrently updated". */
const SETUP_LOCK = 'interns:db-setup';

/** The database a PostgreSQL URL names; refused when it is not one a role name can be built from. */
export function databaseNameOf(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!DATABASE_NAME.test(name)) throw new Error(`unsupported database name "${name}": letters, digits and _ only`);
  return name;
}

/**
 * `<database>_<service>`, e.g. `interns_runs`: roles are cluster-wide, so the database's name keeps two databases
 * on one cluster (a test's own database, a staging copy) from sharing roles.
 */
export function serviceRoleName(database: string, service: ServiceName): string {
  if (!DATABASE_NAME.test(database)) throw new Error(`unsupported database name "${database}": letters, digits and _ only`);
  const role = `${database}_${service}`;
  if (role.length > MAX_IDENTIFIER_LENGTH) {
    throw new Error(`database name "${database}" is too long for its service roles ("${role}" is over ${MAX_IDENTIFIER_LENGTH} characters)`);
  }
  return role;
}

/** The owner URL with `service`'s role as its user (and `password`, or none: trust or peer authentication). */
export function serviceDatabaseUrl(ownerUrl: string, service: ServiceName, password: string | null = null): string {
  const url = new URL(ownerUrl);
  url.username = encodeURIComponent(serviceRoleName(databaseNameOf(ownerUrl), service));
  url.password = password === null ? '' : encodeURIComponent(password);
  return url.toString();
}

/**
 * A SCRAM-SHA-256 verifier (RFC 5802/7677, PostgreSQL's stored format) of `password`: the server stores it as is,
 * so the password itself never reaches the server, its statement log or pg_stat_activity.
 */
export function scramSha256Verifier(password: string, salt: Buffer = randomBytes(16), iterations = 4096): string {
  // PostgreSQL prepares the password with SASLprep; NFKC normalization is its core.
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export interface ServiceRolesOptions {
  /** A service's password (never logged, never returned); null or missing: the role's password is left as it is. */
  passwords?: Partial<Record<ServiceName, string | null>>;
}

export interface ServiceRoleReport {
  service: ServiceName;
  role: string;
  schema: string;
  password: 'set' | 'unchanged';
}

export interface ServiceRolesReport {
  database: string;
  /** The role that owns the schemas and applies the migrations (the URL's user). */
  owner: string;
  roles: ServiceRoleReport[];
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * `admin db-setup`: as the database owner (`ownerUrl`), creates one LOGIN role per service (SERVICE_SCHEMAS) that
 * reaches only its own schema: USAGE on it, row privileges on its tables, its sequences, and the same on every
 * table the owner creates there later (default privileges, so migrations need no grant of their own). CONNECT on
 * the database is taken from PUBLIC and given to the roles; CREATE on `public` is taken from PUBLIC (PostgreSQL 15
 * does so already). Idempotent, and safe beside other runs (an advisory lock, and a role another process created
 * first is used as is). The owner needs CREATEROLE (or superuser).
 */
export async function setupServiceRoles(ownerUrl: string, options: ServiceRolesOptions = {}): Promise<ServiceRolesReport> {
  const database = databaseNameOf(ownerUrl);
  const client = new pg.Client({ connectionString: ownerUrl, application_name: 'db-setup' });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [SETUP_LOCK]);
    const [{ owner }] = (await client.query<{ owner: string }>('SELECT current_user AS owner')).rows;
    await client.query(`REVOKE ALL ON DATABASE ${quoteIdent(database)} FROM PUBLIC`);
    await client.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    const roles: ServiceRoleReport[] = [];
    for (const service of SERVICE_NAMES) {
      const role = serviceRoleName(database, service);
      const schema = SERVICE_SCHEMAS[service];
      const password = options.passwords?.[service] ?? null;
      await createRoleIfMissing(client, role);
      await client.query(`ALTER ROLE ${quoteIdent(role)} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS`);
      if (password !== null) await client.query(`ALTER ROLE ${quoteIdent(role)} PASSWORD ${client.escapeLiteral(scramSha256Verifier(password))}`);
      await grantSchema(client, { database, owner, role, schema });
      roles.push({ service, role, schema, password: password === null ? 'unchanged' : 'set' });
    }
    await client.query('COMMIT');
    return { database, owner, roles };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

async function createRoleIfMissing(client: pg.Client, role: string): Promise<void> {
  const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
  if (rowCount !== 0) return;
  // Roles are cluster-wide and the lock is per database: another cluster user may create the same name meanwhile.
  await client.query('SAVEPOINT create_role');
  try {
    await client.query(`CREATE ROLE ${quoteIdent(role)} NOLOGIN`);
    await client.query('RELEASE SAVEPOINT create_role');
  } catch (error) {
    const { code } = pgErrorFields(error);
    if (code !== PG_ERROR_CODES.duplicateObject && code !== PG_ERROR_CODES.uniqueViolation) throw error;
    await client.query('ROLLBACK TO SAVEPOINT create_role');
  }
}

async function grantSchema(client: pg.Client, target: { database: string; owner: string; role: string; schema: string }): Promise<void> {
  const [role, schema, owner] = [quoteIdent(target.role), quoteIdent(target.schema), quoteIdent(target.owner)];
  await client.query(`GRANT CONNECT ON DATABASE ${quoteIdent(target.database)} TO ${role}`);
  // Owned by the owner, so the migrations (as the owner) create in it and the default privileges below apply.
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await client.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
  await client.query(`GRANT ${TABLE_PRIVILEGES} ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
  await client.query(`GRANT ${SEQUENCE_PRIVILEGES} ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role}`);
  await client.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${schema} TO ${role}`);
  const defaults = `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA ${schema}`;
  await client.query(`${defaults} GRANT ${TABLE_PRIVILEGES} ON TABLES TO ${role}`);
  await client.query(`${defaults} GRANT ${SEQUENCE_PRIVILEGES} ON SEQUENCES TO ${role}`);
  await client.query(`${defaults} GRANT EXECUTE ON FUNCTIONS TO ${role}`);
}

/**
 * Removes the service roles of `database` (tests: no role left behind in a shared cluster). While the database
 * exists, what the roles hold in it is dropped first (DROP OWNED); `adminUrl` must be a superuser's or the owner's.
 */
export async function dropServiceRoles(adminUrl: string, database: string): Promise<void> {
  const roles = SERVICE_NAMES.map((service) => serviceRoleName(database, service));
  const maintenance = new URL(adminUrl);
  maintenance.pathname = '/postgres';
  const client = new pg.Client({ connectionString: maintenance.toString() });
  await client.connect();
  try {
    const existing = (await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname = ANY($1)', [roles])).rows.map(
      (row) => row.rolname,
    );
    if (existing.length === 0) return;
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rowCount !== 0) {
      const inDatabase = new URL(adminUrl);
      inDatabase.pathname = `/${database}`;
      const owned = new pg.Client({ connectionString: inDatabase.toString() });
      await owned.connect();
      try {
        await owned.query(`DROP OWNED BY ${existing.map(quoteIdent).join(', ')}`);
      } finally {
        await owned.end();
      }
    }
    for (const role of existing) await client.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`);
  } finally {
    await client.end();
  }
}
