import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createUser, fromSeed } from '@nats-io/nkeys';
import { assertPrefix, NATS_PROCESSES, natsPermissionsFor, type NatsPermissions, type NatsProcess } from '@interns/contracts';
import { readFileIfExists } from '@interns/files';
import { natsCredsFile, natsCredsPath, parseNatsCreds } from '@interns/messaging';
import { UsageError } from '../admin.errors';
import { parseFlags, requireFlag } from './command-args';

export interface NatsSetupOptions {
  dir: string;
  prefix: string;
  /** JetStream's store directory as the broker will see it; default `<dir>/jetstream`. */
  storeDir: string;
  /**
   * One subdirectory per mount (containers): `server/nats-server.conf` for the broker and `<process>/<process>.creds`
   * for each process, so a container mounts its own subdirectory as NATS_CREDS_DIR and sees no other key.
   * Otherwise everything in `dir` (one host running every process).
   */
  split: boolean;
}

export interface NatsSetupOutput {
  config: string;
  /** Each process's credentials file and the public nkey the configuration lists for it. */
  users: Record<NatsProcess, { creds: string; nkey: string }>;
}

export const NATS_SERVER_CONF = 'nats-server.conf';

export function parseNatsSetupArgs(args: string[], defaultPrefix: string): NatsSetupOptions {
  const { values } = parseFlags('nats-setup', args, {
    dir: { type: 'string' },
    prefix: { type: 'string' },
    'store-dir': { type: 'string' },
    split: { type: 'boolean' },
  });
  const dir = resolve(requireFlag('nats-setup', 'dir', values.dir, 'directory'));
  const prefix = values.prefix ?? defaultPrefix;
  try {
    assertPrefix(prefix);
  } catch (error) {
    throw new UsageError(`nats-setup: --prefix: ${(error as Error).message}`);
  }
  return { dir, prefix, storeDir: values['store-dir'] ?? join(dir, 'jetstream'), split: values.split ?? false };
}

/** The directory holding `process`'s credentials file: what its NATS_CREDS_DIR names. */
export function natsCredsDirOf(options: Pick<NatsSetupOptions, 'dir' | 'split'>, process: NatsProcess): string {
  return options.split ? join(options.dir, process) : options.dir;
}

/** The directory holding the broker's configuration. */
export function natsServerDirOf(options: Pick<NatsSetupOptions, 'dir' | 'split'>): string {
  return options.split ? join(options.dir, 'server') : options.dir;
}

/**
 * `nats-setup --dir <dir> [--prefix <p>] [--store-dir <path>] [--split]`: writes the broker's configuration (JetStream
 * on, one nkey user per process with the permissions of `natsPermissionsFor`, nobody anonymous) and each
 * process's credentials file. An existing credentials file keeps its key, so running it again after a subject
 * change only rewrites the permissions; delete a file to rotate its key.
 */
export async function runNatsSetup(options: NatsSetupOptions): Promise<NatsSetupOutput> {
  await privateDirectory(options.dir);
  const permissions = natsPermissionsFor(options.prefix);
  const users = {} as NatsSetupOutput['users'];
  const entries: string[] = [];
  for (const process of NATS_PROCESSES) {
    const credsDir = natsCredsDirOf(options, process);
    await privateDirectory(credsDir);
    const creds = natsCredsPath(credsDir, process);
    const seed = (await existingSeed(creds)) ?? new TextDecoder().decode(createUser().getSeed());
    const nkey = fromSeed(new TextEncoder().encode(seed)).getPublicKey();
    await writeSecret(creds, natsCredsFile(seed));
    users[process] = { creds, nkey };
    entries.push(userEntry(process, nkey, permissions[process]));
  }
  const serverDir = natsServerDirOf(options);
  await privateDirectory(serverDir);
  const config = join(serverDir, NATS_SERVER_CONF);
  await writeSecret(config, serverConfig(options, entries));
  return { config, users };
}

async function privateDirectory(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  await chmod(path, 0o700);
}

async function existingSeed(path: string): Promise<string | null> {
  const text = await readFileIfExists(path);
  return text === null ? null : parseNatsCreds(text, path);
}

async function writeSecret(path: string, content: string): Promise<void> {
  await writeFile(path, content, { mode: 0o600 });
  await chmod(path, 0o600);
}

/** Quoted, so a `$JS...` subject is not read as a variable reference. */
const quoted = (values: string[]) => `[${values.map((value) => JSON.stringify(value)).join(', ')}]`;
/** An empty allow list would not restrict anything: deny everything instead. */
const rule = (subjects: string[]) => (subjects.length > 0 ? `{ allow: ${quoted(subjects)} }` : `{ deny: [">"] }`);

function userEntry(process: NatsProcess, nkey: string, permissions: NatsPermissions): string {
  return [
    `    # ${process}`,
    '    {',
    `      nkey: ${JSON.stringify(nkey)}`,
    '      permissions: {',
    `        publish: ${rule(permissions.publish)}`,
    `        subscribe: ${rule(permissions.subscribe)}`,
    ...(permissions.allowResponses ? ['        allow_responses: true'] : []),
    '      }',
    '    }',
  ].join('\n');
}

function serverConfig(options: NatsSetupOptions, users: string[]): string {
  return [
    `# Written by "npm run admin -- nats-setup" for NATS_PREFIX=${options.prefix}; permissions come from`,
    '# natsPermissionsFor in libs/contracts: run the command again after a subject change.',
    '# With users listed and no no_auth_user, anonymous connections are refused.',
    'jetstream {',
    `  store_dir: ${JSON.stringify(options.storeDir)}`,
    '}',
    'authorization {',
    '  users: [',
    users.join('\n'),
    '  ]',
    '}',
    '',
  ].join('\n');
}
