import { randomBytes } from 'node:crypto';
import { createWriteStream, type Stats } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ReadEntry } from 'tar';
import type { RuntimeArchiveResult, RuntimeStepReply } from '@interns/contracts';
import { codeOf, discard, isDirectory, isUnwritable, LEGACY_RUNTIME_STATE_FILE, reasonOf, syncPath } from './runtime-files';

export interface WorkspaceArchiverOptions {
  /** `<DATA_DIR>/workspaces`, absolute: archives hold `<intern id>/...` relative to it. */
  workspacesDir: string;
  /** ARCHIVE_DIR, absolute. */
  archiveDir: string;
  /** ARCHIVE_TIMEOUT_MS: an archive not written by then fails (the intern ends `destroy_failed`). */
  timeoutMs: number;
  now: () => Date;
  /**
   * Makes the workspace readable first (its disk attached again after a restart): why it cannot be, or null.
   * Called inside the archive, so a retried step joins the running one.
   */
  attach?: (id: string) => Promise<string | null>;
}

/**
 * The teardown's archive of a workspace (CONTRACT section 22: it never hangs on what an intern left there).
 * Archives the workspace to `<ARCHIVE_DIR>/<id>-<time>.tar.gz`. Only regular files, directories and symlinks go
 * in: opening a FIFO or a socket the intern left would block for ever. An archive that fails or passes
 * ARCHIVE_TIMEOUT_MS is the step's failure (`workspace_archive_failed: <why>`), which a delete with
 * `acknowledge_workspace_loss` finishes without an archive; a call while one runs joins it.
 */
export class WorkspaceArchiver {
  /** Archives in progress by intern: a retried step joins the running one instead of writing a second. */
  private readonly archiving = new Map<string, Promise<RuntimeStepReply<RuntimeArchiveResult>>>();

  constructor(private readonly options: WorkspaceArchiverOptions) {}

  /** `id`: the intern's id, lower case (a path segment under `workspacesDir`). */
  archive(id: string): Promise<RuntimeStepReply<RuntimeArchiveResult>> {
    const running = this.archiving.get(id);
    if (running !== undefined) return running;
    const archived = this.write(id).finally(() => this.archiving.delete(id));
    this.archiving.set(id, archived);
    return archived;
  }

  private async write(id: string): Promise<RuntimeStepReply<RuntimeArchiveResult>> {
    const { archiveDir, workspacesDir, timeoutMs } = this.options;
    const workspace = join(workspacesDir, id);
    const unattachable = (await this.options.attach?.(id)) ?? null;
    if (unattachable !== null) return { ok: false, message: unattachable };
    if (!(await isDirectory(workspace))) return { ok: true, archivePath: null };

    const unwritable = (error: unknown): RuntimeStepReply<RuntimeArchiveResult> => ({
      ok: false,
      message: `archive location ${archiveDir} cannot be written: ${reasonOf(error)}`,
    });
    try {
      await mkdir(archiveDir, { recursive: true });
    } catch (error) {
      if (isUnwritable(error, archiveDir)) return unwritable(error);
      throw error;
    }
    await this.removePartialArchives(id);

    // Written under a hidden temporary name and renamed once complete and on disk, so the final name
    // only ever holds a whole archive, whenever the process dies.
    const stamp = this.options.now().toISOString().replace(/:/g, '');
    const archivePath = join(archiveDir, `${id}-${stamp}.tar.gz`);
    const partialPath = join(archiveDir, `.${id}-${stamp}.${randomBytes(4).toString('hex')}.partial`);
    // tar is loaded by the first archive (an intern's deletion), not by every runs process at its start.
    const { create: createTar } = await import('tar');
    const deadline = AbortSignal.timeout(timeoutMs);
    try {
      const pack = createTar({ gzip: true, portable: true, cwd: workspacesDir, filter: isArchivable }, [id]);
      await pipeline(pack, createWriteStream(partialPath, { flags: 'wx', mode: 0o600 }), { signal: deadline });
      await syncPath(partialPath);
      await rename(partialPath, archivePath);
      await syncPath(archiveDir);
    } catch (error) {
      await discard(partialPath);
      if (deadline.aborted) {
        return { ok: false, message: `the archive was not written within ${timeoutMs / 1000}s (ARCHIVE_TIMEOUT_MS)` };
      }
      if (isUnwritable(error, archiveDir)) return unwritable(error);
      // What the workspace holds is the intern's doing: its failure is the step's, not a reason to retry for ever.
      return { ok: false, message: `the workspace could not be read: ${codeOf(error)}` };
    }
    return { ok: true, archivePath };
  }

  /**
   * Leftovers of an archive attempt that died before its rename: only those older than ARCHIVE_TIMEOUT_MS, so
   * an archive another replica is still writing (a step retried there) keeps its file.
   */
  private async removePartialArchives(id: string): Promise<void> {
    const names = await readdir(this.options.archiveDir);
    const partials = names.filter((name) => name.startsWith(`.${id}-`) && name.endsWith('.partial'));
    const deadBefore = this.options.now().getTime() - this.options.timeoutMs;
    for (const name of partials) {
      const path = join(this.options.archiveDir, name);
      const written = await stat(path).catch(() => null);
      if (written !== null && written.mtimeMs < deadBefore) await rm(path, { force: true });
    }
  }
}

/**
 * What goes into an archive: regular files, directories and symlinks (as links), never a FIFO, socket or device,
 * and never the runtime's legacy record.
 */
function isArchivable(path: string, entry: Stats | ReadEntry): boolean {
  if (!('isFile' in entry)) return false;
  return (entry.isFile() || entry.isDirectory() || entry.isSymbolicLink()) && !isRuntimeFile(path);
}

/** A legacy state file (and its temporaries) belonged to the runtime, not to the intern's workspace content. */
function isRuntimeFile(path: string): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name === LEGACY_RUNTIME_STATE_FILE || (name.startsWith(`${LEGACY_RUNTIME_STATE_FILE}.`) && name.endsWith('.tmp'));
}

