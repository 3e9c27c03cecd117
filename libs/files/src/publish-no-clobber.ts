import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { copyFile, link, unlink, writeFile } from 'node:fs/promises';

/** A sibling name no other process picks: the file is written there completely before it is published. */
export function temporaryPath(path: string): string {
  return `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
}

/**
 * Creates `path` with `content` unless it exists. The file is written completely under a temporary name,
 * then linked into place, which fails when the name exists: of several racing processes exactly one wins,
 * and nobody reads a partial file (generated keys: every process then reads the winner's).
 */
export async function publishNoClobber(path: string, content: string, mode: number): Promise<void> {
  const temporary = temporaryPath(path);
  await writeFile(temporary, content, { mode, flag: 'wx', flush: true });
  try {
    await link(temporary, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    // Filesystems without hard links: an exclusive copy still never replaces the winner's file.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV') throw error;
    await copyFile(temporary, path, fsConstants.COPYFILE_EXCL).catch((copyError: NodeJS.ErrnoException) => {
      if (copyError.code !== 'EEXIST') throw copyError;
    });
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
}
