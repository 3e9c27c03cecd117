/**
 * What every kind of workspace disk answers to (interface section 22): the quota, how full a workspace is, the
 * tool result's note, and the failure a step reports. The kinds: directory-disks.ts and image-disks.ts.
 */
import { rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { WorkspaceDiskName } from '@interns/contracts';

/** Within this many bytes of the quota (or with no inode left) the tool result says the quota is reached. */
const QUOTA_NOTE_SLACK_BYTES = 64 * 1024;

export interface WorkspaceQuota {
  bytes: number;
  inodes: number;
}

/** How full a workspace is, as the shell tool reports it after a command. */
export interface WorkspaceUsage {
  usedBytes: number;
  /** Bytes still free for the intern (an image's own bookkeeping takes a little of the quota). */
  availableBytes: number;
  /** Files and directories used and still free; null where the disk cannot count them (a plain directory). */
  inodes: { used: number; available: number } | null;
}

/** The disk could not be made or attached; the message says why (the step fails with it). */
export class WorkspaceDiskUnavailable extends Error {}

export interface WorkspaceDisks {
  readonly kind: WorkspaceDiskName;
  readonly quota: WorkspaceQuota;
  /** Makes the intern's disk (kept with its files when it exists) and attaches it at `workspace`. */
  create(internId: string, workspace: string): Promise<void>;
  /** Attaches the intern's disk at `workspace` if it is not (after a restart); false when it has none. */
  attach(internId: string, workspace: string): Promise<boolean>;
  /** Detaches and deletes the intern's disk with its files; nothing to do when it is gone. */
  remove(internId: string, workspace: string): Promise<void>;
  /** RLIMIT_FSIZE of the next command in this workspace; null: none (the disk itself bounds every write). */
  fileSizeLimit(workspace: string): Promise<number | null>;
  usage(workspace: string): Promise<WorkspaceUsage | null>;
  /** Detaches every disk this process attached (at shutdown; the next use attaches again). */
  detachAll(): Promise<void>;
}

/** The tool result's note when a command left the workspace (nearly) full, or null. */
export function quotaNote(usage: WorkspaceUsage | null, quota: WorkspaceQuota): string | null {
  if (usage === null) return null;
  if (usage.availableBytes <= QUOTA_NOTE_SLACK_BYTES) {
    return `[workspace quota reached: ${usage.usedBytes} of ${quota.bytes} bytes used; writing past it fails]`;
  }
  if (usage.inodes !== null && usage.inodes.available === 0) {
    return `[workspace quota reached: it holds the most files and directories it may (${quota.inodes}); creating more fails]`;
  }
  return null;
}

/** Moves a directory out of the way, then deletes it, so it disappears at once and a cut-short removal is finished next time. */
export async function removeDirectory(directory: string): Promise<void> {
  const doomed = join(dirname(directory), `.removing-${basename(directory)}`);
  await rm(doomed, { recursive: true, force: true });
  try {
    await rename(directory, doomed);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await rm(doomed, { recursive: true, force: true });
}

export async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (entry) => entry.isDirectory(),
    () => false,
  );
}

