import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Bytes the directory tree takes on disk (`du -s -B1 -x`: allocated blocks, symlinks not followed, one file
 * system). du still prints a total when a file vanished during the walk (exit 1), so the number is read
 * from the output whatever the exit status; null when there is none.
 */
export async function workspaceUsage(directory: string): Promise<number | null> {
  const output = await run('du', ['-s', '-B1', '-x', directory], { timeout: 60_000 }).then(
    ({ stdout }) => stdout,
    (error: { stdout?: string }) => error.stdout ?? '',
  );
  const match = /^(\d+)\s/.exec(output);
  return match === null ? null : Number(match[1]);
}
