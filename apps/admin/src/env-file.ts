/**
 * `npm start` and `npm run admin` read their settings the same way: the process environment, then `.env` in the
 * working directory (the clone's root under npm) for what the environment leaves unset. So a setting written once
 * in `.env` (DATABASE_URL, NATS_PREFIX, DATA_DIR, ...) reaches the services `npm start` runs and every admin command
 * alike. The services themselves read only their environment, which the launcher gives them.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

export const ENV_FILE_NAME = '.env';

type Env = Record<string, string | undefined>;

export interface EnvironmentWithFile {
  /** The environment, with what `.env` sets for variables the environment has not set (or set empty). */
  env: Env;
  /** The file read (absolute), or null when there is none. */
  file: string | null;
}

/** `env` over `<cwd>/.env` (node's dotenv syntax: `NAME=value`, quotes, `#` comments, `export`): the environment wins. */
export function environmentWithEnvFile(env: Env, cwd: string = process.cwd()): EnvironmentWithFile {
  const file = resolve(cwd, ENV_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { env, file: null };
    throw new Error(`${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, { cause: error });
  }
  const merged: Env = { ...env };
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (value !== undefined && (merged[name] === undefined || merged[name] === '')) merged[name] = value;
  }
  return { env: merged, file };
}
