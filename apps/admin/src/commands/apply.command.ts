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

/** `apply <file.json>`: upserts organizations, workspaces, members and API keys, all or nothing. */
export async function runApply(options: ApplyOptions, store: () => Promise<IdentityStore>): Promise<ApplyResult> {
  // Read first: a missing or malformed file fails before the database is even opened.
  const file = await readIdentityFile(options.file);
  return (await store()).apply(file);
}
