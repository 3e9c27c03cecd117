import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Detaches every mount below `directory` (a test's DATA_DIR holds the interns' workspace images, which a
 * service killed without its shutdown leaves mounted), deepest first, so the directory can be removed.
 */
export async function detachMountsBelow(directory: string): Promise<void> {
  const table = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const below = table
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((mountPoint): mountPoint is string => mountPoint !== undefined && mountPoint.startsWith(`${directory}/`))
    .sort((a, b) => b.length - a.length);
  for (const mountPoint of below) await run('umount', ['-l', mountPoint]).catch(() => undefined);
}
