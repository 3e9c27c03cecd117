import { loadConfig, ServiceName } from '@interns/contracts';
import { createPostgresDataSource, ensureDatabase, PostgresOptions, runMigrations } from '@interns/database';

/** `node dist/apps/<app>/src/main.js migrate`: apply the app's schema migrations and exit (compose service, Kubernetes Job). */
export const MIGRATE_COMMAND = 'migrate';

export type ServiceCommand = 'serve' | typeof MIGRATE_COMMAND;

/** The schema one app owns (the gateway: `identity`) and the migrations that build it. */
export interface MigrationTarget {
  /** Names the process in PostgreSQL (`application_name`) and in the output. */
  service: ServiceName;
  schema: string;
  migrations: PostgresOptions['migrations'];
}

/**
 * What `node main.js [command]` asks for: no argument serves, `migrate` migrates. Anything else is refused,
 * so a mistyped Job command fails instead of starting a server that never exits.
 */
export function serviceCommand(argv: readonly string[] = process.argv): ServiceCommand {
  const command = argv[2];
  if (command === undefined) return 'serve';
  if (command === MIGRATE_COMMAND) return MIGRATE_COMMAND;
  throw new Error(`unknown command "${command}": run without arguments to serve, or with "${MIGRATE_COMMAND}"`);
}

/**
 * Applies the target's pending migrations (creating the database and schema when missing) under the
 * schema's advisory lock, so it is safe beside services started with RUN_MIGRATIONS=true and beside a
 * second migrate run. Returns the names it applied: none when the schema was already up to date.
 */
export async function migrateSchema(
  target: MigrationTarget,
  env: Record<string, string | undefined> = process.env,
): Promise<string[]> {
  // The owner: MIGRATIONS_DATABASE_URL, or DATABASE_URL where one URL serves everything (the migrate step's own).
  const { migrationsDatabaseUrl } = loadConfig(env);
  await ensureDatabase(migrationsDatabaseUrl);
  const dataSource = createPostgresDataSource({
    url: migrationsDatabaseUrl,
    schema: target.schema,
    migrations: target.migrations,
    applicationName: `${target.service}-migrate`,
    // One connection holds the schema lock while another applies the migrations.
    poolSize: 2,
  });
  await dataSource.initialize();
  try {
    return await runMigrations(dataSource, target.schema);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * The `migrate` command: one summary line on stdout and exit 0, or the error on stderr and exit 1.
 * Plain lines rather than the service log format: it is a one-shot step whose output a person reads.
 */
export async function runMigrateCommand(target: MigrationTarget): Promise<never> {
  try {
    const applied = await migrateSchema(target);
    process.stdout.write(
      applied.length === 0
        ? `${target.service}: schema "${target.schema}" is up to date\n`
        : `${target.service}: schema "${target.schema}": applied ${applied.length} migration(s): ${applied.join(', ')}\n`,
    );
    process.exit(0);
  } catch (error) {
    process.stderr.write(
      `${target.service}: migrating schema "${target.schema}" failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  }
}
