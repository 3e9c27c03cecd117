/**
 * `admin db-setup` on a real PostgreSQL (a database of its own): one LOGIN role per service that reaches its own
 * schema's rows and nothing else (another service's schema, DDL, `public`, temporary tables), including tables
 * the owner creates after the setup; idempotent and safe to run concurrently; passwords stored as SCRAM verifiers.
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import pg from 'pg';
import { loadConfig, SERVICE_NAMES, type ServiceName } from '@interns/contracts';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createPostgresDataSource, PG_ERROR_CODES, runMigrations, serviceDatabaseUrl, SERVICE_SCHEMAS, ServiceRolesReport } from '@interns/database';
import { createTestDatabase, TestDatabase } from '@interns/testing';
import { runAdmin } from '../admin.cli';
import { UsageError } from '../admin.errors';
import { parseDbSetupArgs, runDbSetup } from './db-setup.command';

let db: TestDatabase;

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const asOwner = <T>(work: (client: pg.Client) => Promise<T>) => withClient(db.url, work);
const asService = <T>(service: ServiceName, work: (client: pg.Client) => Promise<T>) => withClient(serviceDatabaseUrl(db.url, service), work);

/** The SQLSTATE a statement fails with, or 'ok'. */
async function outcome(client: pg.Client, sql: string): Promise<string> {
  try {
    await client.query(sql);
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

async function adminDbSetup(env: Record<string, string>): Promise<ServiceRolesReport> {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(['db-setup'], env, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) });
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(stdout) as ServiceRolesReport;
}

beforeAll(async () => {
  db = await createTestDatabase();
  // A table that exists before the setup (an install that migrated before roles existed) must be granted too.
  await asOwner(async (client) => {
    await client.query('CREATE SCHEMA analytics');
    await client.query('CREATE TABLE analytics.before_setup (id bigserial PRIMARY KEY, note text)');
  });
});

afterAll(async () => {
  // Drops the roles too (TestDatabase.drop).
  await db?.drop();
});

describe('admin db-setup', () => {
  let report: ServiceRolesReport;

  beforeAll(async () => {
    report = await adminDbSetup({ DATABASE_URL: db.url });
    // What the migrations do after the setup, as the owner: every schema gets a table with a sequence.
    await asOwner(async (client) => {
      for (const schema of Object.values(SERVICE_SCHEMAS)) await client.query(`CREATE TABLE ${schema}.probe (id bigserial PRIMARY KEY, note text)`);
    });
  });

  it('creates one role per service, named after the database, with no power beyond logging in', async () => {
    expect(report).toEqual({
      database: db.name,
      owner: 'postgres',
      roles: SERVICE_NAMES.map((service) => ({ service, role: `${db.name}_${service}`, schema: SERVICE_SCHEMAS[service], password: 'unchanged' })),
    });
    const { rows } = await asOwner((client) =>
      client.query(
        `SELECT rolname, rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolinherit, rolreplication, rolbypassrls
           FROM pg_roles WHERE rolname LIKE $1 ORDER BY rolname`,
        [`${db.name}\\_%`],
      ),
    );
    expect(rows).toEqual(
      SERVICE_NAMES.map((service) => `${db.name}_${service}`)
        .sort()
        .map((rolname) => ({ rolname, rolcanlogin: true, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolinherit: false, rolreplication: false, rolbypassrls: false })),
    );
  });

  it.each(SERVICE_NAMES)('lets %s read and write the rows of its own schema, tables made after the setup included', async (service) => {
    const schema = SERVICE_SCHEMAS[service];
    await asService(service, async (client) => {
      const [{ id }] = (await client.query(`INSERT INTO ${schema}.probe (note) VALUES ('written') RETURNING id`)).rows;
      await client.query(`UPDATE ${schema}.probe SET note = 'updated' WHERE id = $1`, [id]);
      expect((await client.query(`SELECT note FROM ${schema}.probe WHERE id = $1`, [id])).rows).toEqual([{ note: 'updated' }]);
      await client.query(`DELETE FROM ${schema}.probe WHERE id = $1`, [id]);
      const [{ usename, current_database }] = (await client.query('SELECT current_user AS usename, current_database()')).rows;
      expect({ usename, current_database }).toEqual({ usename: `${db.name}_${service}`, current_database: db.name });
    });
  });

  it('grants the tables that existed before the setup too', async () => {
    await asService('analytics', async (client) => {
      expect((await client.query(`INSERT INTO analytics.before_setup (note) VALUES ('x') RETURNING note`)).rows).toEqual([{ note: 'x' }]);
    });
  });

  it.each(SERVICE_NAMES)("refuses %s on every other service's schema (SQLSTATE 42501)", async (service) => {
    await asService(service, async (client) => {
      for (const other of SERVICE_NAMES.filter((name) => name !== service)) {
        const schema = SERVICE_SCHEMAS[other];
        expect({ other, read: await outcome(client, `SELECT * FROM ${schema}.probe`) }).toEqual({ other, read: PG_ERROR_CODES.insufficientPrivilege });
        expect({ other, write: await outcome(client, `INSERT INTO ${schema}.probe (note) VALUES ('x')`) }).toEqual({
          other,
          write: PG_ERROR_CODES.insufficientPrivilege,
        });
      }
    });
  });

  it.each(SERVICE_NAMES)('refuses %s any DDL: in its own schema, in public, a schema or a temporary table of its own', async (service) => {
    const schema = SERVICE_SCHEMAS[service];
    await asService(service, async (client) => {
      expect({
        ownSchema: await outcome(client, `CREATE TABLE ${schema}.made_by_service (id int)`),
        publicSchema: await outcome(client, 'CREATE TABLE public.made_by_service (id int)'),
        newSchema: await outcome(client, 'CREATE SCHEMA made_by_service'),
        temporary: await outcome(client, 'CREATE TEMP TABLE made_by_service (id int)'),
        drop: await outcome(client, `DROP TABLE ${schema}.probe`),
        truncate: await outcome(client, `TRUNCATE ${schema}.probe`),
      }).toEqual({
        ownSchema: PG_ERROR_CODES.insufficientPrivilege,
        publicSchema: PG_ERROR_CODES.insufficientPrivilege,
        newSchema: PG_ERROR_CODES.insufficientPrivilege,
        temporary: PG_ERROR_CODES.insufficientPrivilege,
        drop: PG_ERROR_CODES.insufficientPrivilege,
        truncate: PG_ERROR_CODES.insufficientPrivilege,
      });
    });
  });

  it('takes CONNECT and TEMP on the database from PUBLIC and gives CONNECT to the service roles only', async () => {
    const { rows } = await asOwner((client) =>
      client.query(
        `SELECT CASE WHEN acl.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(acl.grantee) END AS grantee, acl.privilege_type
           FROM pg_database d, aclexplode(d.datacl) acl
          WHERE d.datname = current_database() AND acl.grantee <> d.datdba ORDER BY 1, 2`,
      ),
    );
    expect(rows).toEqual(
      SERVICE_NAMES.map((service) => `${db.name}_${service}`)
        .sort()
        .map((grantee) => ({ grantee, privilege_type: 'CONNECT' })),
    );
  });

  it('is idempotent, also when several run at once', async () => {
    const env = { DATABASE_URL: db.url };
    const again = await Promise.all([runDbSetup(loadConfig(env)), runDbSetup(loadConfig(env)), adminDbSetup(env)]);
    for (const rerun of again) expect(rerun).toEqual(report);
    await asService('runs', async (client) => {
      expect(await outcome(client, `INSERT INTO runs.probe (note) VALUES ('after rerun')`)).toBe('ok');
      expect(await outcome(client, 'SELECT * FROM webhooks.probe')).toBe(PG_ERROR_CODES.insufficientPrivilege);
    });
    const { rows } = await asOwner((client) => client.query('SELECT count(*)::int AS count FROM pg_roles WHERE rolname LIKE $1', [`${db.name}\\_%`]));
    expect(rows).toEqual([{ count: SERVICE_NAMES.length }]);
  });

  it("sets a role's password from <SERVICE>_DATABASE_PASSWORD as a SCRAM verifier, never echoing it", async () => {
    const password = 'runs-role-password-Ünïcode';
    const env = { DATABASE_URL: db.url, RUNS_DATABASE_PASSWORD: password };
    let stdout = '';
    expect(await runAdmin(['db-setup'], env, { stdout: (text) => (stdout += text), stderr: () => undefined })).toBe(0);
    expect(stdout).not.toContain(password);
    const roles = (JSON.parse(stdout) as ServiceRolesReport).roles;
    expect(roles.map(({ service, password: state }) => [service, state])).toEqual(SERVICE_NAMES.map((service) => [service, service === 'runs' ? 'set' : 'unchanged']));

    const { rows } = await asOwner((client) =>
      client.query<{ rolname: string; rolpassword: string | null }>('SELECT rolname, rolpassword FROM pg_authid WHERE rolname = $1', [`${db.name}_runs`]),
    );
    const verifier = rows[0].rolpassword ?? '';
    const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier);
    expect(match).not.toBeNull();
    // The stored key is the one the password derives (RFC 5802), so a client giving the password authenticates.
    const [, iterations, salt, storedKey] = match ?? [];
    const salted = pbkdf2Sync(password.normalize('NFKC'), Buffer.from(salt, 'base64'), Number(iterations), 32, 'sha256');
    const expected = createHash('sha256').update(createHmac('sha256', salted).update('Client Key').digest()).digest('base64');
    expect(storedKey).toBe(expected);

    // Run again without the variable: the password stays.
    await adminDbSetup({ DATABASE_URL: db.url });
    const after = await asOwner((client) => client.query('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [`${db.name}_runs`]));
    expect(after.rows).toEqual([{ rolpassword: verifier }]);
  });

  it('takes no arguments', () => {
    expect(() => parseDbSetupArgs(['--force'])).toThrow(UsageError);
    expect(() => parseDbSetupArgs([])).not.toThrow();
  });
});

describe("a service's role given the migrations", () => {
  it('is refused with a message naming MIGRATIONS_DATABASE_URL', async () => {
    class CreateProbeTable1 implements MigrationInterface {
      async up(runner: QueryRunner): Promise<void> {
        await runner.query('CREATE TABLE webhooks.made_by_role (id int)');
      }
      async down(runner: QueryRunner): Promise<void> {
        await runner.query('DROP TABLE webhooks.made_by_role');
      }
    }
    const dataSource = createPostgresDataSource({
      url: serviceDatabaseUrl(db.url, 'webhooks'),
      schema: 'webhooks',
      migrations: [CreateProbeTable1],
      applicationName: 'db-setup.command.int.spec',
    });
    await dataSource.initialize();
    try {
      await expect(runMigrations(dataSource, 'webhooks')).rejects.toThrow(/migrations run as the database owner; set MIGRATIONS_DATABASE_URL/);
    } finally {
      await dataSource.destroy();
    }
  });
});
