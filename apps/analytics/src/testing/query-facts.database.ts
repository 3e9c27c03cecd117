import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase } from '@interns/testing';
import { ANALYTICS_MIGRATIONS } from '../migrations';
import { insertRunFacts, QUERY_FACTS } from './run-facts.fixture';

export interface QueryFactsDatabase {
  dataSource: DataSource;
  drop(): Promise<void>;
}

/**
 * A database of its own, migrated, holding QUERY_FACTS: what the query's integration tests read. `timezone`: the
 * database's own time zone, set before the test's connections open (buckets must not follow it).
 */
export async function queryFactsDatabase(applicationName: string, options: { timezone?: string } = {}): Promise<QueryFactsDatabase> {
  const db = await createTestDatabase();
  const open = (name: string) => openDatabase({ url: db.url, schema: 'analytics', migrations: ANALYTICS_MIGRATIONS, applicationName: name, migrate: true });
  if (options.timezone !== undefined) {
    const setup = await open('setup');
    await setup.query(`ALTER DATABASE ${db.name} SET timezone TO '${options.timezone}'`);
    await setup.destroy();
  }
  const dataSource = await open(applicationName);
  await insertRunFacts(dataSource, QUERY_FACTS);
  return {
    dataSource,
    async drop() {
      await dataSource.destroy();
      await db.drop();
    },
  };
}
