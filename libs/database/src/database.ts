import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { DataSource, MigrationExecutor, MigrationInterface } from 'typeorm';
import { PG_ERROR_CODES, pgErrorFields } from './pg-errors';

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
      await client.query(`CREATE DATABASE "${name}"`).catch((error: unknown) => {
        // duplicate_database, or unique_violation on pg_database: another process created it first.
        const { code } = pgErrorFields(error);
        if (code !== PG_ERROR_CODES.duplicateDatabase && code !== PG_ERROR_CODES.uniqueViolation) throw error;
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
  /**
   * PostgreSQL's `statement_timeout` on every connection of the pool: a statement running longer is
   * cancelled (SQLSTATE 57014) and its connection is free again, so a hung database turns into a failed
   * request within the route deadline instead of a held connection. Left out: no limit (migrations, tools).
   */
  statementTimeoutMs?: number;
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
    extra: {
      max: options.poolSize ?? 10,
      ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
    },
  });
}

/**
 * Applies pending migrations under an advisory lock, so replicas starting together never race.
 * The schema is created first because TypeORM keeps its migrations table inside it.
 * Returns the names of the migrations this call applied (none when another process got there first).
 */
export async function runMigrations(dataSource: DataSource, schema: string): Promise<string[]> {
  try {
    return await runMigrationsLocked(dataSource, schema);
  } catch (error) {
    // A service's own role given the migrations: say which URL must name the owner instead.
    if (pgErrorFields(error).code !== PG_ERROR_CODES.insufficientPrivilege) throw error;
    throw new Error(
      `migrating schema "${schema}" was refused (${error instanceof Error ? error.message : String(error)}): migrations run as the ` +
        'database owner; set MIGRATIONS_DATABASE_URL to the owner\'s URL (or run the migrate step as the owner and start with RUN_MIGRATIONS=false)',
      { cause: error },
    );
  }
}

async function runMigrationsLocked(dataSource: DataSource, schema: string): Promise<string[]> {
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

/**
 * The names of the data source's migrations not yet recorded in its schema (read only: creates nothing). Before
 * the first migration there is no migrations table: every migration is pending. That is checked first because
 * TypeORM would create the table, which a service's own role may not (and should not) do.
 */
export async function pendingMigrations(dataSource: DataSource, schema: string): Promise<string[]> {
  const table = `"${schema}"."${schema}_migrations"`;
  const [{ present }]: { present: boolean }[] = await dataSource.query('SELECT to_regclass($1) IS NOT NULL AS present', [table]);
  if (!present) return dataSource.migrations.map((migration) => migration.name ?? migration.constructor.name);
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
    const pending = await pendingMigrations(dataSource, options.schema);
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
   * The database owner's URL, which creates the database when missing and applies the migrations (the service's
   * own role, `url`, may do neither). Default: `url`.
   */
  migrationsUrl?: string;
  /**
   * With `migrate: false`: wait up to this long for the schema to be fully migrated by another process,
   * then fail. Left out (tests, tools): no check.
   */
  migrationsWaitMs?: number;
}

/**
 * Migrations (applied as the owner, `migrationsUrl`, the database created first if missing; or awaited when
 * `migrationsWaitMs` is set) + initialize: what every service does at start; the returned pool connects with `url`
 * (the service's own role). Migrations run on a short-lived pool of their own without `statementTimeoutMs`:
 * waiting for the schema's advisory lock while another replica migrates, and a migration itself (an index
 * build, a backfill), may take far longer than any request should.
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<DataSource> {
  const migrationsUrl = options.migrationsUrl ?? options.url;
  if (options.migrate) {
    // Only the owner creates a missing database: a service's own role may not (nor, where pg_hba is strict, reach
    // the `postgres` database to look). Without migrating, the migrate step has created it.
    await ensureDatabase(migrationsUrl);
    const { statementTimeoutMs: _requestBound, ...unbounded } = options;
    // One connection holds the schema lock while another applies the migrations. Its own application_name: in
    // pg_stat_activity the owner's connections are told from the service's.
    const migrating = createPostgresDataSource({ ...unbounded, url: migrationsUrl, applicationName: `${options.applicationName}-migrate`, poolSize: 2 });
    await migrating.initialize();
    try {
      await runMigrations(migrating, options.schema);
    } finally {
      await migrating.destroy();
    }
  }
  const dataSource = createPostgresDataSource(options);
  await dataSource.initialize();
  try {
    if (!options.migrate && options.migrationsWaitMs !== undefined) {
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
