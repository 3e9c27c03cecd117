import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { recordTestPrefix } from './test-prefix-ledger';

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** Refuses to touch any database whose name does not say it is a test database. */
export function assertTestDatabaseName(name: string): void {
  if (!/^[a-z0-9_]+$/.test(name) || !name.includes('test')) {
    throw new Error(`refusing to create or drop database "${name}": test databases must contain "test"`);
  }
}

/**
 * Creates `interns_test_<random>` on the machine's PostgreSQL; drop() removes it (forcing out connections) and the
 * roles named after it (`admin db-setup`'s `<name>_<service>`), so none is left in the shared cluster.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `interns_test_${randomBytes(6).toString('hex')}`;
  assertTestDatabaseName(name);
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      assertTestDatabaseName(name);
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        // With the database gone, its roles hold nothing any more and can go too.
        const { rows } = await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)', [`${name}_`]);
        for (const { rolname } of rows) await client.query(`DROP ROLE IF EXISTS "${rolname}"`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A NATS_PREFIX of its own for one test file, so jest workers and repeated runs never collide. Noted in the run's
 * ledger, whose global teardown deletes the streams made under it.
 */
export function testNatsPrefix(): string {
  const prefix = `test_${randomBytes(5).toString('hex')}`;
  recordTestPrefix(prefix);
  return prefix;
}
