import pg from 'pg';
import { DataSource, MigrationInterface } from 'typeorm';

type MigrationClass = new () => MigrationInterface;

/** Creates the database named in `url` when it does not exist yet (safe when several processes race). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`unsupported database name "${name}"`);
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const client = new pg.Client({ connectionString: maintenance.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      await client.query(`CREATE DATABASE "${name}"`).catch((error: { code?: string }) => {
        // 42P04 duplicate_database, 23505 unique_violation: another process created it first.
        if (error.code !== '42P04' && error.code !== '23505') throw error;
      });
    }
  } finally {
    await client.end();
  }
}

export interface PostgresOptions {
  url: string;
  /** The service's own schema; its migrations table lives there too. */
  schema: string;
  migrations: MigrationClass[];
  entities?: NonNullable<ConstructorParameters<typeof DataSource>[0]['entities']>;
  poolSize?: number;
  applicationName: string;
}

export function createPostgresDataSource(options: PostgresOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    schema: options.schema,
    migrationsTableName: `${options.schema}_migrations`,
    migrations: options.migrations,
    entities: options.entities ?? [],
    synchronize: false,
    migrationsRun: false,
    applicationName: options.applicationName,
    extra: { max: options.poolSize ?? 10 },
  });
}

/**
 * Applies pending migrations under an advisory lock, so replicas starting together never race.
 * The schema is created first because TypeORM keeps its migrations table inside it.
 */
export async function runMigrations(dataSource: DataSource, schema: string): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock(hashtext($1))', [`migrations:${schema}`]);
    try {
      await runner.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [`migrations:${schema}`]);
    }
  } finally {
    await runner.release();
  }
}

/** ensureDatabase + initialize + optional migrations: what every service does at start. */
export async function openDatabase(options: PostgresOptions & { migrate: boolean }): Promise<DataSource> {
  await ensureDatabase(options.url);
  const dataSource = createPostgresDataSource(options);
  await dataSource.initialize();
  if (options.migrate) await runMigrations(dataSource, options.schema);
  return dataSource;
}
