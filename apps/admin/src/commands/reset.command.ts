import type { NatsConnection } from '@nats-io/transport-node';
import type { PlatformConfig } from '@interns/contracts';
import { type DatabaseFootprint, databaseFootprint, dropDatabaseAndRoles } from '@interns/database';
import { deleteStreams, listPrefixStreams, type PrefixStream } from '@interns/messaging';
import { type AdminTarget, describeTarget, TextReport } from '../admin-output';
import { UsageError } from '../admin.errors';
import { parseFlags } from './command-args';

export interface ResetOptions {
  /** Confirmed on the command line: no question asked. */
  yes: boolean;
  json: boolean;
}

export function parseResetArgs(args: string[]): ResetOptions {
  const { values } = parseFlags('reset', args, { yes: { type: 'boolean' }, json: { type: 'boolean' } });
  return { yes: values.yes ?? false, json: values.json ?? false };
}

/** How reset asks before it removes anything: null when nobody is at a terminal to answer. */
export type Confirm = ((question: string) => Promise<boolean>) | null;

export interface ResetContext {
  config: PlatformConfig;
  target: AdminTarget;
  nats: () => Promise<NatsConnection>;
  confirm: Confirm;
}

export interface ResetOutput extends AdminTarget {
  /** Whether the database existed and was dropped. */
  dropped_database: boolean;
  /** `admin db-setup`'s roles of the database, dropped with it. */
  dropped_roles: string[];
  /** The prefix's JetStream streams (KV buckets and object stores included) deleted. */
  deleted_streams: string[];
  /** Left as it is: workspaces, archives and generated keys. */
  kept_data_dir: string;
}

/** Development only: NODE_ENV=production or ADMIN_RESET=off (environment or .env) refuse before anything is read. */
function refusal(config: PlatformConfig): string | null {
  if (config.nodeEnv === 'production') return 'reset: refused with NODE_ENV=production (it is for development machines only)';
  if (config.adminReset === 'off') return 'reset: refused: ADMIN_RESET=off';
  return null;
}

function describePlan(target: AdminTarget, database: DatabaseFootprint, streams: PrefixStream[]): string[] {
  const lines: string[] = [];
  if (database.exists) {
    lines.push(`  database "${database.database}" on ${target.database_server}${database.roles.length > 0 ? `, and its roles ${database.roles.join(', ')}` : ''}`);
  } else if (database.roles.length > 0) {
    lines.push(`  the roles ${database.roles.join(', ')} (database "${database.database}" is already gone)`);
  }
  for (const stream of streams) lines.push(`  stream ${stream.name} (${stream.messages} messages, ${stream.bytes} bytes)`);
  return lines;
}

/**
 * `reset [--yes] [--json]`: drops the database (and its service roles) and deletes the NATS prefix's JetStream
 * streams, so the next `npm start` begins from nothing. It shows what it will remove and asks at a terminal; without
 * one it needs `--yes`. A database someone is connected to (a running `npm start`) is refused before anything goes.
 * The database goes first: if the streams then fail, running reset again finishes the job. DATA_DIR is kept.
 * Who may run it: whoever holds the database owner's URL and may manage the prefix's JetStream streams (an anonymous
 * development broker; the `admin` NATS user of `nats-setup` may not); it reaches only that database, its roles and
 * the streams isStreamOfPrefix names.
 */
export async function runReset(options: ResetOptions, context: ResetContext): Promise<ResetOutput | TextReport> {
  const refused = refusal(context.config);
  if (refused !== null) throw new Error(refused);
  const owner = context.config.migrationsDatabaseUrl;
  const database = await databaseFootprint(owner);
  if (database.sessions.length > 0) {
    throw new Error(
      `reset: database "${database.database}" is in use (${database.sessions.join(', ')}): stop what uses it first (npm start: Ctrl-C); nothing removed`,
    );
  }
  const nc = await context.nats();
  const streams = await listPrefixStreams(nc, context.config.natsPrefix).catch((error: unknown) => {
    // E.g. the admin's NATS user (NATS_CREDS_DIR) may not use the JetStream API: a secured broker is no dev machine's.
    throw new Error(`reset: cannot list the JetStream streams of NATS prefix "${context.config.natsPrefix}" (${(error as Error).message}); nothing removed`, {
      cause: error,
    });
  });
  const plan = describePlan(context.target, database, streams);
  const dataDir = context.config.dataDir;
  if (plan.length === 0) return report(options, context.target, { database: false, roles: [] }, [], dataDir);

  if (!options.yes) {
    const question = [`reset on ${describeTarget(context.target)} removes:`, ...plan, 'Remove all of this?'].join('\n');
    if (context.confirm === null) {
      throw new UsageError(`reset: not a terminal, so nothing to confirm with: pass --yes to remove\n${plan.join('\n')}`);
    }
    if (!(await context.confirm(question))) throw new Error('reset: not confirmed; nothing removed');
  }
  const dropped = await dropDatabaseAndRoles(owner);
  let deleted: string[];
  try {
    deleted = await deleteStreams(nc, streams.map((stream) => stream.name));
  } catch (error) {
    throw new Error(`reset: database "${database.database}" dropped, but deleting the streams failed (${(error as Error).message}); run reset again`, {
      cause: error,
    });
  }
  return report(options, context.target, dropped, deleted, dataDir);
}

function report(
  options: ResetOptions,
  target: AdminTarget,
  dropped: { database: boolean; roles: string[] },
  deleted: string[],
  dataDir: string,
): ResetOutput | TextReport {
  const output: ResetOutput = { ...target, dropped_database: dropped.database, dropped_roles: dropped.roles, deleted_streams: deleted, kept_data_dir: dataDir };
  if (options.json) return output;
  const removed = [
    ...(dropped.database ? [`  database "${target.database}"`] : []),
    ...(dropped.roles.length > 0 ? [`  roles ${dropped.roles.join(', ')}`] : []),
    ...deleted.map((name) => `  stream ${name}`),
  ];
  return new TextReport([
    removed.length === 0 ? `Nothing to remove on ${describeTarget(target)}.` : `Removed on ${describeTarget(target)}:`,
    ...removed,
    `Kept DATA_DIR (${dataDir}): workspaces, archives and keys; delete it yourself to start from nothing.`,
    'Next: npm start, then npm run admin -- quickstart',
  ]);
}
