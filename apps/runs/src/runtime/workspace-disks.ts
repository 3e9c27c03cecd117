/**
 * An intern's workspace "disk" (interface section 22): where its files live and what bounds them. Two kinds,
 * chosen by WORKSPACE_DISK:
 * - `image`: a filesystem image per intern (`<DATA_DIR>/disks/<intern id>.img`, ext4, sized to the quota and
 *   with the inode cap), loop-mounted at the workspace path. The kernel enforces the quota exactly: a write
 *   past it fails with ENOSPC in the program that wrote, whatever the number of files or commands.
 * - `directory`: a plain directory; the quota bounds each file a command writes (RLIMIT_FSIZE = what is left),
 *   which a command writing several files can pass. For hosts without loop devices or mount rights.
 */
import { resolve } from 'node:path';
import type { WorkspaceDiskName } from '@interns/contracts';
import { DirectoryDisks } from './directory-disks';
import { ImageDisks } from './image-disks';
import type { WorkspaceDiskLeases } from './workspace-disk-leases';
import type { WorkspaceDisks, WorkspaceQuota } from './workspace-disk';

/** The disks WORKSPACE_DISK names. */
export function workspaceDisksFor(kind: WorkspaceDiskName, dataDir: string, quota: WorkspaceQuota, leases: WorkspaceDiskLeases): WorkspaceDisks {
  return kind === 'image' ? new ImageDisks({ imagesDir: resolve(dataDir, 'disks'), quota, leases }) : new DirectoryDisks(quota);
}
