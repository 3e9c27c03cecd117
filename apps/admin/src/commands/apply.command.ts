import { readFile } from 'node:fs/promises';
import type { ApplyResult, IdentityStore } from '@interns/identity';
import { UsageError } from '../admin.errors';
import { parseFlags } from './command-args';

export interface ApplyOptions {
  file: string;
}

export function parseApplyArgs(args: string[]): ApplyOptions {
  const { positionals } = parseFlags('apply', args, {}, true);
  if (positionals.length !== 1 || positionals[0] === undefined) {
    throw new UsageError('apply: expected exactly one argument, the identity file: apply <file.json>');
  }
  return { file: positionals[0] };
}

/** Reads and parses the file; its shape is checked by IdentityStore.apply. */
export async function readIdentityFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(code === 'ENOENT' ? `${file}: no such file` : `${file}: cannot be read (${code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}

/** Deletes the daemon tokens of these members and of these organizations' interns; resolves to how many. */
export type DaemonTokenRevoker = (memberIds: string[], organizationIds: string[]) => Promise<number>;

export interface ApplyOutput extends ApplyResult {
  revoked_daemon_tokens: number;
}

/**
 * `apply <file.json>`: upserts organizations, workspaces, members and API keys, all or nothing (applyIdentities).
 */
export async function runApply(
  options: ApplyOptions,
  store: () => Promise<IdentityStore>,
  revokeDaemonTokens: DaemonTokenRevoker,
): Promise<ApplyOutput> {
  // Read first: a missing or malformed file fails before the database is even opened.
  const file = await readIdentityFile(options.file);
  return applyIdentities(file, await store(), revokeDaemonTokens);
}

/**
 * Applies an identity file (the shape of `apply`'s, checked by IdentityStore.apply). Deactivated members and
 * organizations that left the programme lose their daemon tokens before the apply commits: the change is only
 * seen as one (active before, inactive after) inside this apply, so a revocation that fails rolls it back and
 * running apply again retries both. `apply` and `quickstart` both write identities through here.
 */
export async function applyIdentities(file: unknown, store: IdentityStore, revokeDaemonTokens: DaemonTokenRevoker): Promise<ApplyOutput> {
  let revoked = 0;
  const result = await store.apply(file, async ({ deactivated_members: members, organizations_left_programme: organizations }) => {
    if (members.length === 0 && organizations.length === 0) return;
    try {
      revoked = await revokeDaemonTokens(members, organizations);
    } catch (error) {
      throw new Error(
        `nothing applied: revoking the daemon tokens of members [${members.join(', ')}] and organizations ` +
          `[${organizations.join(', ')}] is pending (${(error as Error).message}); run apply again`,
        { cause: error },
      );
    }
  });
  return { ...result, revoked_daemon_tokens: revoked };
}
