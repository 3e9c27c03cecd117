import { chmod, readFile, rename, rmdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { publishNoClobber } from './publish-no-clobber';

export interface LegacyFileMove {
  /** Where an older release kept the file. */
  from: string;
  /** Where it belongs now (its directory exists). */
  to: string;
  /** The mode the file has in its new place. */
  mode: number;
}

/**
 * Moves a file an older release kept elsewhere into its new place, for a start that found the new place
 * empty. A rename is atomic, so racing processes see the file at exactly one of the two places; across
 * filesystems it is copied (never over an existing file) and the original removed. The legacy directory
 * goes when nothing else is left in it. False when there is nothing to move: there never was, or another
 * process moved it first.
 */
export async function moveLegacyFile(move: LegacyFileMove): Promise<boolean> {
  try {
    await rename(move.from, move.to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EXDEV') throw error;
    if (!(await copyAcrossFilesystems(move))) return false;
  }
  await chmod(move.to, move.mode);
  // Best effort: a directory still holding something else (or already gone) stays as it is.
  await rmdir(dirname(move.from)).catch(() => undefined);
  return true;
}

async function copyAcrossFilesystems(move: LegacyFileMove): Promise<boolean> {
  let content: string;
  try {
    content = await readFile(move.from, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  await publishNoClobber(move.to, content, move.mode);
  await unlink(move.from).catch(ignoreMissing);
  return true;
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}
