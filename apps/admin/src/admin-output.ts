import type { PlatformConfig } from '@interns/contracts';
import { databaseNameOf } from '@interns/database';
import { describeEndpoint, natsEndpoints, postgresEndpoint } from './launcher/infrastructure-preflight';

/**
 * What a command prints for a person at a terminal instead of JSON (`quickstart`, `reset`; their `--json` prints
 * the JSON). Every other command prints JSON only.
 */
export class TextReport {
  constructor(readonly lines: readonly string[]) {}

  toString(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

/** Where a command acted, as it reports it: no URL is echoed (a URL may hold a password). */
export interface AdminTarget {
  database: string;
  /** host:port (or socket path) of PostgreSQL. */
  database_server: string;
  nats_prefix: string;
  /** host:port of each NATS server. */
  nats_servers: string;
  /** The .env file read besides the environment; null: the environment alone. */
  env_file: string | null;
}

export function adminTarget(config: PlatformConfig, envFile: string | null): AdminTarget {
  return {
    database: databaseNameOf(config.migrationsDatabaseUrl),
    database_server: describeEndpoint(postgresEndpoint(config.migrationsDatabaseUrl)),
    nats_prefix: config.natsPrefix,
    nats_servers: natsEndpoints(config.natsUrl).map(describeEndpoint).join(', '),
    env_file: envFile,
  };
}

/** `database "interns" on 127.0.0.1:5432, NATS prefix "interns" on 127.0.0.1:4222 (settings: the environment and /x/.env)`. */
export function describeTarget(target: AdminTarget): string {
  const settings = target.env_file === null ? 'the environment' : `the environment and ${target.env_file}`;
  return (
    `database "${target.database}" on ${target.database_server}, NATS prefix "${target.nats_prefix}" on ` +
    `${target.nats_servers} (settings: ${settings})`
  );
}
