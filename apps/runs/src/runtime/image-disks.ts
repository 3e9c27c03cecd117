/**
 * WORKSPACE_DISK=image (interface section 22): an ext4 image per intern, loop-mounted at its workspace, so the
 * kernel enforces the quota (bytes and inodes) for the whole workspace.
 *
 * The system tools run here (mkfs.ext4, e2fsck, mount, umount, cp) are the runs service's own work on root-owned
 * images and mount points, never a command of an intern: those run only in the sandbox (section 15). `cp -a` copies
 * an old workspace's files as they are (symlinks as symlinks, FIFOs made anew, never opened or followed).
 */
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, open, rename, rm, rmdir, stat, statfs } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Logger } from '@nestjs/common';
import { makePrivateDirectory } from '@interns/files';
import { isUnwritable, reasonOf } from './runtime-files';
import type { WorkspaceDiskLeases } from './workspace-disk-leases';
import { isDirectory, removeDirectory, WorkspaceDiskUnavailable, type WorkspaceDisks, type WorkspaceQuota, type WorkspaceUsage } from './workspace-disk';

const run = promisify(execFile);

/** How long one mount tool (mkfs, e2fsck, mount, umount, cp) may take before the step fails. */
const TOOL_TIMEOUT_MS = 120_000;
/**
 * An image holds at most one inode per this many bytes of its size: inode tables take room in the image
 * (256 bytes each), so a small quota with a large inode cap could not be made at all.
 */
const IMAGE_BYTES_PER_INODE = 4096;

export interface ImageDisksOptions {
  /** Where the images live: `<DATA_DIR>/disks`, out of every sandbox's reach. */
  imagesDir: string;
  quota: WorkspaceQuota;
  /** Who may mount an image: one process at a time (two hosts mounting one ext4 image corrupt it). */
  leases: WorkspaceDiskLeases;
}

/**
 * WORKSPACE_DISK=image: an ext4 image per intern, loop-mounted (nosuid, nodev) at its workspace path. Sparse, so
 * it takes on the volume only what the intern wrote. No journal: an image is checked (`e2fsck -p`) before every
 * mount, which repairs what a crash left. Needs root with mount rights and loop devices (docs/deployment.md).
 */
export class ImageDisks implements WorkspaceDisks {
  readonly kind = 'image' as const;
  readonly quota: WorkspaceQuota;
  private readonly logger = new Logger('WorkspaceDisks');
  private readonly imagesDir: string;
  private readonly leases: WorkspaceDiskLeases;
  /** Workspaces this process mounted (detached at shutdown). */
  private readonly mounted = new Set<string>();
  /** One attach (or create) per intern at a time: a second caller waits for the first. */
  private readonly attaching = new Map<string, Promise<boolean>>();
  private tools: Promise<string | null> | undefined;

  constructor(options: ImageDisksOptions) {
    this.imagesDir = options.imagesDir;
    this.quota = { bytes: options.quota.bytes, inodes: Math.min(options.quota.inodes, Math.floor(options.quota.bytes / IMAGE_BYTES_PER_INODE)) };
    this.leases = options.leases;
  }

  imagePath(internId: string): string {
    return join(this.imagesDir, `${internId}.img`);
  }

  async create(internId: string, workspace: string): Promise<void> {
    await this.requireTools();
    if (!(await exists(this.imagePath(internId)))) await this.makeImage(internId);
    if (!(await this.attach(internId, workspace))) throw new WorkspaceDiskUnavailable('the workspace image vanished while it was attached');
  }

  attach(internId: string, workspace: string): Promise<boolean> {
    const pending = this.attaching.get(internId);
    if (pending !== undefined) return pending;
    const attempt = this.attachOnce(internId, workspace).finally(() => this.attaching.delete(internId));
    this.attaching.set(internId, attempt);
    return attempt;
  }

  async remove(internId: string, workspace: string): Promise<void> {
    await this.pendingAttach(internId);
    if (await isMountPoint(workspace)) await this.unmount(workspace);
    await removeDirectory(workspace);
    await rm(this.imagePath(internId), { force: true });
    await rm(`${this.imagePath(internId)}.new`, { force: true });
    await this.leases.release(internId);
  }

  async fileSizeLimit(): Promise<null> {
    // The filesystem bounds the workspace; a per-file limit would only also cut files in the in-memory /tmp.
    return null;
  }

  async usage(workspace: string): Promise<WorkspaceUsage | null> {
    if (!(await isMountPoint(workspace))) return null;
    const fs = await statfs(workspace);
    return {
      usedBytes: (fs.blocks - fs.bfree) * fs.bsize,
      availableBytes: fs.bavail * fs.bsize,
      inodes: { used: fs.files - fs.ffree, available: fs.ffree },
    };
  }

  async detachAll(): Promise<void> {
    for (const workspace of [...this.mounted]) {
      await this.unmount(workspace).catch((error: unknown) => this.logger.warn(`could not detach ${workspace}: ${(error as Error).message}`));
    }
    await this.leases.releaseAll();
  }

  private async pendingAttach(internId: string): Promise<void> {
    await this.attaching.get(internId)?.catch(() => undefined);
  }

  private async attachOnce(internId: string, workspace: string): Promise<boolean> {
    // Mounted in this mount namespace (by this process, or another on the same host): one kernel mount, shared safely.
    if (await isMountPoint(workspace)) return true;
    if (!(await this.leases.claim(internId))) {
      throw new WorkspaceDiskUnavailable('the workspace image is attached by another runs replica (WORKSPACE_DISK=image needs the workspaces on one runs replica)');
    }
    const image = this.imagePath(internId);
    if (!(await exists(image))) {
      // A workspace from before images (a plain directory with the intern's files) moves into one.
      if (!(await isDirectory(workspace))) return false;
      await this.requireTools();
      await this.moveIntoImage(internId, workspace);
      return true;
    }
    await this.requireTools();
    await mkdir(workspace, { recursive: true, mode: 0o700 });
    await this.mount(image, workspace);
    return true;
  }

  /** Sparse file of the quota's size, ext4 with the inode cap, written under a temporary name and renamed when whole. */
  private async makeImage(internId: string): Promise<void> {
    try {
      await makePrivateDirectory(this.imagesDir);
    } catch (error) {
      if (isUnwritable(error, this.imagesDir)) throw new WorkspaceDiskUnavailable(`the images directory cannot be written: ${reasonOf(error)}`);
      throw error;
    }
    const image = this.imagePath(internId);
    const partial = `${image}.new`;
    const file = await open(partial, 'w', 0o600);
    try {
      await file.truncate(this.quota.bytes);
    } finally {
      await file.close();
    }
    // -m 0: no blocks reserved for root (the intern is never root); no journal, lazy inode tables and no discard
    // keep the image sparse and the creation fast.
    await tool('mkfs.ext4', ['-q', '-F', '-N', String(this.quota.inodes), '-m', '0', '-O', '^has_journal', '-E', 'lazy_itable_init=1,nodiscard', '-L', 'workspace', partial]);
    await rename(partial, image);
  }

  private async mount(image: string, workspace: string): Promise<void> {
    // -p repairs what is safe to repair; exit 1 (fixed) and 2 (fixed, reboot advised: not for a loop image) are fine.
    const check = await tool('e2fsck', ['-p', image], [0, 1, 2]);
    if (check.code !== 0) this.logger.warn(`e2fsck repaired the workspace image ${basename(image)}`);
    await tool('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', image, workspace]);
    this.mounted.add(workspace);
    // mkfs leaves lost+found in the root: e2fsck makes it again when it needs one.
    await rmdir(join(workspace, 'lost+found')).catch(() => undefined);
  }

  private async unmount(workspace: string): Promise<void> {
    try {
      await tool('umount', [workspace]);
    } catch (error) {
      // A process still holds a file in it (a sandbox ending as the intern is deleted): detach it now, the
      // kernel releases the image when the last holder lets go.
      this.logger.warn(`workspace ${basename(workspace)} busy; detaching lazily: ${(error as Error).message}`);
      await tool('umount', ['-l', workspace]);
    }
    this.mounted.delete(workspace);
  }

  /** Copies a plain-directory workspace into a new image, then mounts the image in its place. */
  private async moveIntoImage(internId: string, workspace: string): Promise<void> {
    await this.makeImage(internId);
    const staging = join(dirname(workspace), `.moving-${basename(workspace)}`);
    await mkdir(staging, { recursive: true, mode: 0o700 });
    await this.mount(this.imagePath(internId), staging);
    try {
      await tool('cp', ['-a', '--', `${workspace}/.`, `${staging}/`]);
    } catch (error) {
      await this.unmount(staging);
      await rm(this.imagePath(internId), { force: true });
      throw new WorkspaceDiskUnavailable(`the workspace does not fit its image (${(error as Error).message.split('\n')[0]})`);
    } finally {
      if (this.mounted.has(staging)) await this.unmount(staging);
      await rmdir(staging).catch(() => undefined);
    }
    await removeDirectory(workspace);
    await mkdir(workspace, { recursive: true, mode: 0o700 });
    await this.mount(this.imagePath(internId), workspace);
    this.logger.log(`workspace of intern ${internId} moved into its own image`);
  }

  /** mkfs.ext4, e2fsck, mount, umount and loop devices, checked once: the reason when one is missing. */
  private async requireTools(): Promise<void> {
    this.tools ??= missingImageTools();
    const missing = await this.tools;
    if (missing !== null) throw new WorkspaceDiskUnavailable(`workspace images unavailable (WORKSPACE_DISK=image): ${missing}`);
  }
}


async function missingImageTools(): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'the runs service must run as root to mount them';
  for (const name of ['mkfs.ext4', 'e2fsck', 'mount', 'umount']) {
    const found = await run('sh', ['-c', `command -v ${name}`], { env: { PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin:/usr/bin:/bin` } }).then(
      () => true,
      () => false,
    );
    if (!found) return `install ${name === 'mkfs.ext4' || name === 'e2fsck' ? 'e2fsprogs' : 'util-linux'} (no ${name} on this host)`;
  }
  const loopControl = await access('/dev/loop-control', constants.R_OK | constants.W_OK).then(
    () => true,
    () => false,
  );
  if (!loopControl) return 'no loop devices (/dev/loop-control is missing or not writable)';
  return null;
}

/** A mount point is on another device than its parent directory. */
export async function isMountPoint(path: string): Promise<boolean> {
  try {
    const [own, parent] = await Promise.all([stat(path), stat(dirname(path))]);
    return own.isDirectory() && own.dev !== parent.dev;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Runs a system tool; throws with its own words unless its exit code is one of `accepted`. */
async function tool(name: string, args: string[], accepted: number[] = [0]): Promise<{ code: number }> {
  try {
    await run(name, args, { timeout: TOOL_TIMEOUT_MS, env: { PATH: `/usr/sbin:/sbin:/usr/bin:/bin`, LC_ALL: 'C' } });
    return { code: 0 };
  } catch (error) {
    const failure = error as { code?: number | string; stderr?: string; message: string };
    if (typeof failure.code === 'number' && accepted.includes(failure.code)) return { code: failure.code };
    const words = (failure.stderr ?? '').trim() || failure.message;
    throw new WorkspaceDiskUnavailable(`${name} failed: ${words}`);
  }
}

