/**
 * What the local runtime's steps share about files: where a workspace held the runtime's record once, and
 * small OS helpers whose errors are the steps' verdicts.
 */
import { open, rm, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';

/**
 * Where a workspace held the runtime's record before the sandbox gave the workspace to the intern (who could
 * then rewrite it). Such a file is ignored and left out of archives; records now live in `<DATA_DIR>/runtimes`.
 */
export const LEGACY_RUNTIME_STATE_FILE = '.runtime.json';

/** OS reasons that mean "this location cannot be written": retrying the same step cannot help. */
const UNWRITABLE_CODES = new Set([
  'EACCES',
  'EPERM',
  'EROFS',
  'ENOTDIR',
  'EEXIST',
  'EISDIR',
  'ENOSPC',
  'EDQUOT',
  'ENAMETOOLONG',
  'ELOOP',
]);

/** Whether `path` is a directory (false when it, or a directory on the way, is absent). */
export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw error;
  }
}

/** Best-effort removal of a temporary file after a failure; the failure is what gets reported. */
export async function discard(path: string): Promise<void> {
  await rm(path, { force: true }).catch(() => undefined);
}

/** Flushes a file or directory entry to stable storage. */
export async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** An OS error about `location` itself (or a path leading to it or inside it) that writing cannot overcome. */
export function isUnwritable(error: unknown, location: string): boolean {
  const { code, path } = error as NodeJS.ErrnoException;
  if (code === undefined || !UNWRITABLE_CODES.has(code) || typeof path !== 'string') return false;
  const target = resolve(path);
  return target === location || target.startsWith(location + sep) || location.startsWith(target + sep);
}

/** The OS error code (`EACCES`), naming no host path. */
export function codeOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : 'unexpected error';
}

/** The OS message, e.g. `ENOTDIR: not a directory, mkdir '/x/archives'` (not `instanceof`: errors may cross realms). */
export function reasonOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}
