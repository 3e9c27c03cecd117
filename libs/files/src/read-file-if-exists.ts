import { readFile } from 'node:fs/promises';

/** The file's text, or null when it does not exist (yet); any other failure is thrown. */
export async function readFileIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
