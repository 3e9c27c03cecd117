import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join, relative } from 'node:path';
import { list as listTar } from 'tar';
import { LocalRuntimeDriver, LEGACY_RUNTIME_STATE_FILE } from './local-runtime.driver';
import { ModelCatalog } from './model-catalog';
import { UnsandboxedShell } from './shell/unsandboxed-shell';
import { soleHolderLeases } from './workspace-disk-leases';
import { DirectoryDisks } from './directory-disks';
import { ImageDisks, isMountPoint } from './image-disks';

const QUOTA = { bytes: 16 * 1024 * 1024, inodes: 1000 };
const directories = new DirectoryDisks(QUOTA);

/** The driver on a real filesystem, recovering from what a crash at any point leaves behind. */
describe('LocalRuntimeDriver after a crash', () => {
  let root: string;
  let driver: LocalRuntimeDriver;
  const catalog = new ModelCatalog({ defaultModel: 'local/scripted', openAiCompatibleBaseUrl: null });
  const shell = new UnsandboxedShell({ timeoutMs: 5000, outputLimitBytes: 65536 });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'runs-driver-'));
    // DATA_DIR as configured may be relative; the driver works with absolute paths.
    driver = new LocalRuntimeDriver({
      dataDir: relative(process.cwd(), join(root, 'data')),
      archiveDir: join(root, 'data', 'archives'),
      archiveTimeoutMs: 60_000,
      catalog,
      shell,
      disks: directories,
    });
  });

  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('resolves DATA_DIR to an absolute path', () => {
    expect(isAbsolute(driver.workspacesDir)).toBe(true);
    expect(driver.workspacesDir).toBe(join(root, 'data', 'workspaces'));
  });

  it('finishes a removal cut short', async () => {
    const internId = randomUUID();
    const workspace = driver.workspacePath(internId);
    await driver.prepareDisk(internId);
    await writeFile(join(workspace, 'a.txt'), 'a');
    const halfRemoved = join(driver.workspacesDir, `.removing-${internId}`);
    await mkdir(join(halfRemoved, 'left'), { recursive: true });

    expect(await driver.removeDisk(internId)).toEqual({ ok: true });
    await expect(stat(workspace)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(halfRemoved)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('clears a partial archive left by a dead attempt and never shows one under an archive name', async () => {
    const internId = randomUUID();
    await driver.prepareDisk(internId);
    await mkdir(driver.archiveDir, { recursive: true });
    const partial = join(driver.archiveDir, `.${internId}-2020-01-01T000000.000Z.dead.partial`);
    await writeFile(partial, 'half an archive');
    // Older than ARCHIVE_TIMEOUT_MS: its writer is gone.
    const longAgo = new Date(Date.now() - 120_000);
    await utimes(partial, longAgo, longAgo);
    // Written just now: another replica may still be writing it.
    const fresh = join(driver.archiveDir, `.${internId}-2020-01-01T000001.000Z.live.partial`);
    await writeFile(fresh, 'an archive being written');

    const reply = await driver.archive(internId);
    if (!reply.ok || reply.archivePath === null) throw new Error(`no archive: ${JSON.stringify(reply)}`);
    const names = await readdir(driver.archiveDir);
    expect(names.filter((name) => name.includes(internId)).sort()).toEqual([basename(fresh), basename(reply.archivePath)].sort());
  });

  it('treats an unreadable state record as a runtime that is not running, and boot rewrites it', async () => {
    const internId = randomUUID();
    await driver.prepareDisk(internId);
    await mkdir(driver.runtimesDir, { recursive: true });
    await writeFile(driver.statePath(internId), '{"state":"runn');

    expect(await driver.health(internId)).toEqual({ healthy: false, detail: 'runtime never booted' });
    expect(await driver.stop(internId)).toEqual({ ok: true });
    expect(await driver.boot({ internId, model: null, hostname: 'h.interns.localhost' })).toEqual({ ok: true });
    expect(await driver.health(internId)).toEqual({
      healthy: true,
      detail: 'runtime running local/scripted as h.interns.localhost',
    });
    expect((await readdir(driver.runtimesDir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it("keeps the runtime's record out of the workspace the intern owns, and ignores one a workspace holds", async () => {
    const internId = randomUUID();
    await driver.prepareDisk(internId);
    // A record an intern wrote into its own workspace (or one an older version left there) counts for nothing.
    await writeFile(join(driver.workspacePath(internId), LEGACY_RUNTIME_STATE_FILE), '{"state":"running","model":"forged"}');
    expect(await driver.health(internId)).toEqual({ healthy: false, detail: 'runtime never booted' });
    await driver.boot({ internId, model: null, hostname: 'h.interns.localhost' });
    expect(await readdir(driver.workspacePath(internId))).toEqual([LEGACY_RUNTIME_STATE_FILE]);
    expect(JSON.parse(await readFile(driver.statePath(internId), 'utf8'))).toMatchObject({ state: 'running', model: 'local/scripted' });
    await driver.removeDisk(internId);
    await expect(stat(driver.statePath(internId))).rejects.toThrow(/ENOENT/);
  });

  it('fails to prepare a disk where DATA_DIR cannot be written, naming the reason', async () => {
    await writeFile(join(root, 'file'), 'not a directory');
    const blocked = new LocalRuntimeDriver({
      dataDir: join(root, 'file'),
      archiveDir: join(root, 'a'),
      archiveTimeoutMs: 60_000,
      catalog,
      shell,
      disks: directories,
    });
    expect(await blocked.prepareDisk(randomUUID())).toEqual({
      ok: false,
      message: expect.stringContaining('cannot be created: ENOTDIR: not a directory'),
    });
  });

  it('answers a shell command on a missing workspace with the reason, naming no host path', async () => {
    const answer = await driver.runShell(randomUUID(), { command: 'true', signal: new AbortController().signal });
    expect(answer).toBe('the shell could not start: the workspace disk of this intern is gone');
  });
});

/** Teardown never hangs on what an intern left in its workspace (CONTRACT section 22). */
describe('LocalRuntimeDriver archives', () => {
  let root: string;
  const catalog = new ModelCatalog({ defaultModel: 'local/scripted', openAiCompatibleBaseUrl: null });
  const shell = new UnsandboxedShell({ timeoutMs: 5000, outputLimitBytes: 65536 });
  const driverWith = (archiveTimeoutMs: number) =>
    new LocalRuntimeDriver({ dataDir: join(root, 'data'), archiveDir: join(root, 'archives'), archiveTimeoutMs, catalog, shell, disks: directories });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'runs-archive-'));
  });

  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function entriesOf(archivePath: string): Promise<string[]> {
    const entries: string[] = [];
    await listTar({ file: archivePath, onReadEntry: (entry) => entries.push(`${entry.type} ${entry.path}`) });
    return entries.sort();
  }

  it('archives files, directories and symlinks, and leaves out a FIFO and a unix socket instead of waiting on them', async () => {
    const driver = driverWith(60_000);
    const internId = randomUUID();
    await driver.prepareDisk(internId);
    const workspace = driver.workspacePath(internId);
    await mkdir(join(workspace, 'dir'));
    await writeFile(join(workspace, 'dir', 'note.txt'), 'kept');
    await symlink('dir/note.txt', join(workspace, 'link'));
    execFileSync('mkfifo', [join(workspace, 'pipe')]);
    const server = createServer();
    await new Promise<void>((done) => server.listen(join(workspace, 'socket'), done));
    try {
      const reply = await driver.archive(internId);
      if (!reply.ok || reply.archivePath === null) throw new Error(`no archive: ${JSON.stringify(reply)}`);
      expect(await entriesOf(reply.archivePath)).toEqual([
        `Directory ${internId}/`,
        `Directory ${internId}/dir/`,
        `File ${internId}/dir/note.txt`,
        `SymbolicLink ${internId}/link`,
      ]);
    } finally {
      server.close();
    }
  });

  it('fails an archive that passes ARCHIVE_TIMEOUT_MS, leaving no partial file', async () => {
    const driver = driverWith(1);
    const internId = randomUUID();
    await driver.prepareDisk(internId);
    await writeFile(join(driver.workspacePath(internId), 'big.bin'), Buffer.alloc(64 * 1024 * 1024, 7));

    expect(await driver.archive(internId)).toEqual({
      ok: false,
      message: 'the archive was not written within 0.001s (ARCHIVE_TIMEOUT_MS)',
    });
    expect((await readdir(driver.archiveDir)).filter((name) => name.includes(internId))).toEqual([]);
  });

  it('joins an archive already running for the intern instead of writing a second', async () => {
    const driver = driverWith(60_000);
    const internId = randomUUID();
    await driver.prepareDisk(internId);
    await writeFile(join(driver.workspacePath(internId), 'a.txt'), 'a');

    const firstCall = driver.archive(internId);
    const secondCall = driver.archive(internId);
    expect(secondCall).toBe(firstCall);
    const [first, second] = await Promise.all([firstCall, secondCall]);
    expect(second).toEqual(first);
    expect((await readdir(driver.archiveDir)).filter((name) => name.includes(internId))).toHaveLength(1);
  });
});

/** WORKSPACE_DISK=image: each workspace a loop-mounted filesystem image of its own (needs root and loop devices). */
describe('LocalRuntimeDriver on image disks', () => {
  let root: string;
  let disks: ImageDisks;
  let driver: LocalRuntimeDriver;
  const catalog = new ModelCatalog({ defaultModel: 'local/scripted', openAiCompatibleBaseUrl: null });
  const shell = new UnsandboxedShell({ timeoutMs: 5000, outputLimitBytes: 65536 });
  const driverOn = (imageDisks: ImageDisks) =>
    new LocalRuntimeDriver({ dataDir: join(root, 'data'), archiveDir: join(root, 'archives'), archiveTimeoutMs: 60_000, catalog, shell, disks: imageDisks });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'runs-images-'));
    disks = new ImageDisks({ imagesDir: join(root, 'data', 'disks'), quota: QUOTA, leases: soleHolderLeases() });
    driver = driverOn(disks);
  });

  afterAll(async () => {
    await disks?.detachAll();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('prepares a disk as a mounted image of the quota, sparse on the volume, and removes it whole', async () => {
    const internId = randomUUID();
    expect(await driver.prepareDisk(internId)).toEqual({ ok: true });
    const workspace = driver.workspacePath(internId);
    expect(await isMountPoint(workspace)).toBe(true);
    expect(await readdir(workspace)).toEqual([]);
    const image = await stat(disks.imagePath(internId));
    expect(image.size).toBe(QUOTA.bytes);
    expect(image.blocks * 512).toBeLessThan(QUOTA.bytes / 2);
    expect(image.mode & 0o777).toBe(0o600);
    // Prepared again (a retried step): the same disk, files kept.
    await writeFile(join(workspace, 'kept.txt'), 'kept');
    expect(await driver.prepareDisk(internId)).toEqual({ ok: true });
    expect(await readFile(join(workspace, 'kept.txt'), 'utf8')).toBe('kept');

    expect(await driver.removeDisk(internId)).toEqual({ ok: true });
    expect(await isMountPoint(workspace)).toBe(false);
    await expect(stat(workspace)).rejects.toThrow(/ENOENT/);
    await expect(stat(disks.imagePath(internId))).rejects.toThrow(/ENOENT/);
    expect(await driver.removeDisk(internId)).toEqual({ ok: true });
  });

  it('attaches the disk again after a restart, for a command and for the teardown archive', async () => {
    const internId = randomUUID();
    expect(await driver.prepareDisk(internId)).toEqual({ ok: true });
    await writeFile(join(driver.workspacePath(internId), 'notes.txt'), 'mine');
    await disks.detachAll();
    expect(await isMountPoint(driver.workspacePath(internId))).toBe(false);

    disks = new ImageDisks({ imagesDir: join(root, 'data', 'disks'), quota: QUOTA, leases: soleHolderLeases() });
    driver = driverOn(disks);
    expect(await driver.runShell(internId, { command: 'cat notes.txt', signal: new AbortController().signal })).toBe('mine');
    await disks.detachAll();
    disks = new ImageDisks({ imagesDir: join(root, 'data', 'disks'), quota: QUOTA, leases: soleHolderLeases() });
    driver = driverOn(disks);
    const archived = await driver.archive(internId);
    if (!archived.ok || archived.archivePath === null) throw new Error(`archive failed: ${JSON.stringify(archived)}`);
    const names: string[] = [];
    await listTar({ file: archived.archivePath, onReadEntry: (entry) => names.push(entry.path) });
    expect(names).toContain(`${internId}/notes.txt`);
    expect(await driver.removeDisk(internId)).toEqual({ ok: true });
  });

  it('moves a workspace from before images (a plain directory) into an image of its own, files kept', async () => {
    const internId = randomUUID();
    const workspace = driver.workspacePath(internId);
    await mkdir(join(workspace, 'src'), { recursive: true });
    await writeFile(join(workspace, 'src', 'main.py'), 'print(1)\n');
    await symlink('src/main.py', join(workspace, 'link'));
    expect(await driver.runShell(internId, { command: 'cat link', signal: new AbortController().signal })).toBe('print(1)\n');
    expect(await isMountPoint(workspace)).toBe(true);
    await stat(disks.imagePath(internId));
    expect((await readdir(workspace)).sort()).toEqual(['link', 'src']);
    expect(await driver.removeDisk(internId)).toEqual({ ok: true });
  });

  it('does not mount an image another runs replica holds (its lease), and says so', async () => {
    const internId = randomUUID();
    expect(await driver.prepareDisk(internId)).toEqual({ ok: true });
    await disks.detachAll();
    const heldElsewhere = { claim: async () => false, release: async () => undefined, releaseAll: async () => undefined };
    const blocked = driverOn(new ImageDisks({ imagesDir: join(root, 'data', 'disks'), quota: QUOTA, leases: heldElsewhere }));
    expect(await blocked.runShell(internId, { command: 'true', signal: new AbortController().signal })).toBe(
      "the shell could not start: the workspace disk of this intern could not be attached (the runs service's log says why)",
    );
    expect(await blocked.health(internId)).toEqual({ healthy: false, detail: expect.stringContaining('attached by another runs replica') });
    expect(await isMountPoint(driver.workspacePath(internId))).toBe(false);
    disks = new ImageDisks({ imagesDir: join(root, 'data', 'disks'), quota: QUOTA, leases: soleHolderLeases() });
    driver = driverOn(disks);
    expect(await driver.removeDisk(internId)).toEqual({ ok: true });
  });

  it('fails the step, naming why, where images cannot be made', async () => {
    await writeFile(join(root, 'not-a-directory'), '');
    const blocked = driverOn(new ImageDisks({ imagesDir: join(root, 'not-a-directory', 'disks'), quota: QUOTA, leases: soleHolderLeases() }));
    expect(await blocked.prepareDisk(randomUUID())).toEqual({ ok: false, message: expect.stringMatching(/cannot be created: the images directory cannot be written: EEXIST/) });
  });
});
