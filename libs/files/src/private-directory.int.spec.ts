import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePrivateDirectory } from './private-directory';

describe('makePrivateDirectory', () => {
  let root: string;
  const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'private-dir-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('makes the private root and what lies below it 0700, and a missing DATA_DIR above it with the default mode', async () => {
    const dataDir = join(root, 'data');
    const keysDir = join(dataDir, 'keys');
    await makePrivateDirectory(join(keysDir, 'daemon-signing'), keysDir);
    expect(await modeOf(keysDir)).toBe(0o700);
    expect(await modeOf(join(keysDir, 'daemon-signing'))).toBe(0o700);
    // Still searchable by others: the shell sandbox runs as another uid and reaches workspaces below it.
    expect((await modeOf(dataDir)) & 0o001).toBe(0o001);
  });

  it('keeps the mode of a directory that exists, and refuses a path outside its private root', async () => {
    await mkdir(join(root, 'open'), { mode: 0o755 });
    await makePrivateDirectory(join(root, 'open'));
    expect(await modeOf(join(root, 'open'))).toBe(0o755);
    await expect(makePrivateDirectory(join(root, 'elsewhere'), join(root, 'keys'))).rejects.toThrow(/is not inside/);
  });
});
