/**
 * End to end: least privilege in PostgreSQL (issue 23). With the whole platform running (each service started as
 * `npm start` does: migrated as the owner, serving as its own role from `admin db-setup`), and after a real chat
 * that every service takes part in, every connection of the platform's database in pg_stat_activity belongs to
 * the role of the service its application_name names; none is the owner's (a superuser). A service's role is
 * refused (SQLSTATE 42501) on another service's schema.
 */
import pg from 'pg';
import { PLATFORM_SERVICES, Platform, type PlatformService } from '@interns/testing';
import { PG_ERROR_CODES, serviceRoleName } from '@interns/database';
import { API, createRunningIntern, IDENTITIES, KEYS, prompt, readStream, sleep } from '@interns/testing/e2e';

interface Connection {
  usename: string;
  application_name: string;
}

let platform: Platform;

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

async function connectionsOfTheDatabase(): Promise<Connection[]> {
  const client = new pg.Client({ connectionString: platform.database.url });
  await client.connect();
  try {
    const { rows } = await client.query<Connection>(
      `SELECT usename, application_name FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
    );
    return rows;
  } finally {
    await client.end();
  }
}

async function sqlStateAs(service: PlatformService, sql: string): Promise<string> {
  const client = new pg.Client({ connectionString: platform.serviceDatabaseUrl(service) });
  await client.connect();
  try {
    await client.query(sql);
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end();
  }
}

describe('database roles (pg_stat_activity)', () => {
  it("connects every service as its own role, and nothing of the platform as the owner", async () => {
    // Every service's pool in use: a provisioned intern and a chat run (gateway, lifecycle, runs), whose
    // integration events analytics and webhooks record.
    const internId = await createRunningIntern(platform);
    const summary = await readStream(await prompt(platform, internId, 'hello'));
    expect(summary.finishReason).toBe('stop');

    // Pools close idle connections: look a few times, with requests in between (the egress log is read by egress
    // from its own schema), until each service was seen.
    const seen: Connection[] = [];
    for (let attempt = 0; attempt < 50; attempt++) {
      await platform.api(`${API}/interns`, { token: KEYS.alice });
      await platform.api(`${API}/interns/${internId}/egress/log`, { token: KEYS.alice });
      seen.push(...(await connectionsOfTheDatabase()));
      if (PLATFORM_SERVICES.every((service) => seen.some((connection) => connection.application_name === service))) break;
      await sleep(200);
    }
    const roleOf = (service: string) => serviceRoleName(platform.database.name, service as PlatformService);
    expect(PLATFORM_SERVICES.filter((service) => !seen.some((connection) => connection.application_name === service))).toEqual([]);
    const strangers = seen.filter(
      (connection) => !(PLATFORM_SERVICES as readonly string[]).includes(connection.application_name) || connection.usename !== roleOf(connection.application_name),
    );
    expect(strangers).toEqual([]);
    expect(seen.filter((connection) => connection.usename === 'postgres')).toEqual([]);
  }, 60_000);

  it("refuses one service's role on another service's schema (SQLSTATE 42501)", async () => {
    expect({
      gatewayOnRuns: await sqlStateAs('gateway', 'SELECT count(*) FROM runs.runs'),
      runsOnIdentity: await sqlStateAs('runs', 'SELECT count(*) FROM identity.api_keys'),
      analyticsOnLifecycle: await sqlStateAs('analytics', 'SELECT count(*) FROM lifecycle.interns'),
      webhooksOnAnalytics: await sqlStateAs('webhooks', 'SELECT count(*) FROM analytics.run_facts'),
      lifecycleOnWebhooks: await sqlStateAs('lifecycle', 'SELECT count(*) FROM webhooks.endpoints'),
      runsOnOwnSchema: await sqlStateAs('runs', 'SELECT count(*) FROM runs.runs'),
    }).toEqual({
      gatewayOnRuns: PG_ERROR_CODES.insufficientPrivilege,
      runsOnIdentity: PG_ERROR_CODES.insufficientPrivilege,
      analyticsOnLifecycle: PG_ERROR_CODES.insufficientPrivilege,
      webhooksOnAnalytics: PG_ERROR_CODES.insufficientPrivilege,
      lifecycleOnWebhooks: PG_ERROR_CODES.insufficientPrivilege,
      runsOnOwnSchema: 'ok',
    });
  });
});
