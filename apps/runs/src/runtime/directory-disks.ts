// runtime/: an intern's runtime on this host (driver, workspace disks, archives, model catalog, shell sandbox).
import { mkdir } from 'node:fs/promises';
import { workspaceUsage } from './shell/workspace-usage';
import { isDirectory, removeDirectory, type WorkspaceDisks, type WorkspaceQuota, type WorkspaceUsage } from './workspace-disk';

/** WORKSPACE_DISK=directory: a plain directory per intern, the quota checked per command and bounding each file. */
export class DirectoryDisks implements WorkspaceDisks {
  readonly kind = 'directory' as const;

  constructor(readonly quota: WorkspaceQuota) {}

  async create(_internId: string, workspace: string): Promise<void> {
    await mkdir(workspace, { recursive: true });
  }

  attach(_internId: string, workspace: string): Promise<boolean> {
    return isDirectory(workspace);
  }

  async remove(_internId: string, workspace: string): Promise<void> {
    await removeDirectory(workspace);
  }

  async fileSizeLimit(workspace: string): Promise<number> {
    return Math.max(0, this.quota.bytes - ((await workspaceUsage(workspace)) ?? 0));
  }

  async usage(workspace: string): Promise<WorkspaceUsage | null> {
    const usedBytes = await workspaceUsage(workspace);
    return usedBytes === null ? null : { usedBytes, availableBytes: Math.max(0, this.quota.bytes - usedBytes), inodes: null };
  }

  async detachAll(): Promise<void> {
    // Nothing is attached: a directory is always there.
  }
}

