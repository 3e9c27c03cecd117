import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { DataSource, MigrationExecutor, MigrationInterface } from 'typeorm';

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
 * Returns the names of the migrations this call applied (none when another process got there first).
 */
export async function runMigrations(dataSource: DataSource, schema: string): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock(hashtext($1))', [`migrations:${schema}`]);
    try {
      await runner.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      return applied.map((migration) => migration.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [`migrations:${schema}`]);
    }
  } finally {
    await runner.release();
  }
}

/** The names of the data source's migrations not yet recorded in its schema (read only: creates nothing). */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const pending = await new MigrationExecutor(dataSource).getPendingMigrations();
  return pending.map((migration) => migration.name);
}

/** How often a service that does not migrate looks again, and how often it says it is still waiting. */
const MIGRATIONS_POLL_MS = 1000;
const MIGRATIONS_WAIT_LOG_EVERY_MS = 10000;

/**
 * Waits until another process (the migrate step: a compose service or a Kubernetes Job) has applied every
 * migration this code knows, so a service never serves against an older schema. Fails after `timeoutMs`.
 */
export async function waitForMigrations(
  dataSource: DataSource,
  options: { schema: string; timeoutMs: number; logger: Pick<Logger, 'log' | 'warn'> },
): Promise<void> {
  const started = Date.now();
  let lastLog = -Infinity;
  for (;;) {
    const pending = await pendingMigrations(dataSource);
    if (pending.length === 0) {
      if (lastLog !== -Infinity) options.logger.log(`schema "${options.schema}" is migrated; starting`);
      return;
    }
    const waited = Date.now() - started;
    const summary = `schema "${options.schema}" has ${pending.length} pending migration(s) (${pending.join(', ')})`;
    if (waited >= options.timeoutMs) {
      throw new Error(
        `${summary} after waiting ${options.timeoutMs} ms (MIGRATIONS_WAIT_MS): run the migrate step ` +
          '(`node dist/apps/<app>/src/main.js migrate`, the compose `migrations` service or the Kubernetes Job) ' +
          'or start with RUN_MIGRATIONS=true',
      );
    }
    if (waited - lastLog >= MIGRATIONS_WAIT_LOG_EVERY_MS) {
      options.logger.warn(`${summary}; RUN_MIGRATIONS=false, waiting for the migrate step (${Math.round(waited / 1000)} s so far)`);
      lastLog = waited;
    }
    await sleep(Math.min(MIGRATIONS_POLL_MS, options.timeoutMs - waited));
  }
}

export interface OpenDatabaseOptions extends PostgresOptions {
  /** true: apply pending migrations (under the schema's lock). false: use the schema as it is. */
  migrate: boolean;
  /**
   * With `migrate: false`: wait up to this long for the schema to be fully migrated by another process,
   * then fail. Left out (tests, tools): no check.
   */
  migrationsWaitMs?: number;
}

/** ensureDatabase + initialize + migrations (applied, or awaited when `migrationsWaitMs` is set): what every service does at start. */
export async function openDatabase(options: OpenDatabaseOptions): Promise<DataSource> {
  await ensureDatabase(options.url);
  const dataSource = createPostgresDataSource(options);
  await dataSource.initialize();
  try {
    if (options.migrate) await runMigrations(dataSource, options.schema);
    else if (options.migrationsWaitMs !== undefined) {
      await waitForMigrations(dataSource, {
        schema: options.schema,
        timeoutMs: options.migrationsWaitMs,
        logger: new Logger(options.applicationName),
      });
    }
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}
