import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { moveLegacyFile } from './move-legacy-file';

/** tmpfs, a filesystem of its own beside the temporary directory on Linux. */
const OTHER_FILESYSTEM = '/dev/shm';

describe('moveLegacyFile', () => {
  const cleanup: string[] = [];

  afterEach(async () => {
    for (const dir of cleanup.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function legacyLayout(root: string, others: string[] = []): Promise<{ legacyDir: string; newDir: string }> {
    cleanup.push(root);
    const legacyDir = join(root, 'legacy');
    const newDir = await mkdtemp(join(tmpdir(), 'interns-move-to-'));
    cleanup.push(newDir);
    await mkdir(legacyDir);
    await writeFile(join(legacyDir, 'key.pem'), 'secret\n', { mode: 0o644 });
    for (const name of others) await writeFile(join(legacyDir, name), '{}\n');
    return { legacyDir, newDir };
  }

  it('moves the file with the given mode and removes the emptied directory', async () => {
    const root = await mkdtemp(join(tmpdir(), 'interns-move-'));
    const { legacyDir, newDir } = await legacyLayout(root);
    const to = join(newDir, 'key.pem');

    expect(await moveLegacyFile({ from: join(legacyDir, 'key.pem'), to, mode: 0o600 })).toBe(true);
    expect(await readFile(to, 'utf8')).toBe('secret\n');
    expect((await stat(to)).mode & 0o777).toBe(0o600);
    expect(await readdir(root)).toEqual([]);
    // Once: nothing is left to move, and the moved file stays.
    expect(await moveLegacyFile({ from: join(legacyDir, 'key.pem'), to, mode: 0o600 })).toBe(false);
    expect(await readFile(to, 'utf8')).toBe('secret\n');
  });

  it('keeps the legacy directory when something else is still in it', async () => {
    const root = await mkdtemp(join(tmpdir(), 'interns-move-'));
    const { legacyDir, newDir } = await legacyLayout(root, ['public.json']);

    expect(await moveLegacyFile({ from: join(legacyDir, 'key.pem'), to: join(newDir, 'key.pem'), mode: 0o600 })).toBe(true);
    expect(await readdir(legacyDir)).toEqual(['public.json']);
  });

  it('copies across filesystems, then removes the original', async () => {
    const root = await mkdtemp(join(OTHER_FILESYSTEM, 'interns-move-'));
    const { legacyDir, newDir } = await legacyLayout(root);
    expect((await stat(legacyDir)).dev).not.toBe((await stat(newDir)).dev);
    const to = join(newDir, 'key.pem');

    expect(await moveLegacyFile({ from: join(legacyDir, 'key.pem'), to, mode: 0o600 })).toBe(true);
    expect(await readFile(to, 'utf8')).toBe('secret\n');
    expect((await stat(to)).mode & 0o777).toBe(0o600);
    expect(await readdir(root)).toEqual([]);
  });
});
