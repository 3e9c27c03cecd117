import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * Creates `privateRoot` and `path` below it as mode 0700 directories, and whatever lies above `privateRoot`
 * with the default mode. Not `mkdir(path, { recursive: true, mode: 0o700 })`: that gives every directory it
 * creates 0700, DATA_DIR included, and the shell sandbox (another uid) must search DATA_DIR to reach a
 * workspace. Directories that exist keep their mode.
 */
export async function makePrivateDirectory(path: string, privateRoot: string = path): Promise<void> {
  const target = resolve(path);
  const root = resolve(privateRoot);
  if (target !== root && !target.startsWith(`${root}/`)) throw new Error(`${target} is not inside ${root}`);
  await mkdir(dirname(root), { recursive: true });
  const chain: string[] = [];
  for (let current = target; current !== dirname(root); current = dirname(current)) chain.unshift(current);
  for (const directory of chain) {
    await mkdir(directory, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }
}
