import { randomBytes } from 'node:crypto';
import { createWriteStream, type Stats } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { create as createTar, type ReadEntry } from 'tar';
import type { RuntimeArchiveResult, RuntimeHealthReply, RuntimeStepReply } from '@interns/contracts';
import { DomainError, isUuid } from '@interns/contracts';
import { makePrivateDirectory } from '@interns/files';
import type { ModelCatalog } from './model-catalog';
import type { RuntimeBootSpec, RuntimeDriver, ShellCommand } from './runtime-driver';
import type { ShellRunner } from './shell/shell-runner';

/**
 * Where a workspace held the runtime's record before the sandbox gave the workspace to the intern (who could
 * then rewrite it). Such a file is ignored and left out of archives; records now live in `<DATA_DIR>/runtimes`.
 */
export const LEGACY_RUNTIME_STATE_FILE = '.runtime.json';

export interface RuntimeState {
  state: 'running' | 'stopped';
  model: string;
  hostname: string;
  updatedAt: string;
}

export interface LocalRuntimeDriverOptions {
  /** DATA_DIR; workspaces live in `<DATA_DIR>/workspaces/<internId>`. */
  dataDir: string;
  /** ARCHIVE_DIR. */
  archiveDir: string;
  /** ARCHIVE_TIMEOUT_MS: an archive not written by then fails (the intern ends `destroy_failed`). */
  archiveTimeoutMs: number;
  catalog: ModelCatalog;
  /** Runs the shell tool's commands (the sandbox). */
  shell: ShellRunner;
  now?: () => Date;
}

/** OS reasons that mean "this location cannot be written": retrying the same step cannot help. */
const UNWRITABLE_CODES = new Set([
  'EACCES',
  'EPERM',
  'EROFS',
  'ENOTDIR',
  'EEXIST',
  'EISDIR',
  'ENOSPC',
  'EDQUOT',
  'ENAMETOOLONG',
  'ELOOP',
]);

const OK: RuntimeStepReply = { ok: true };

/**
 * Runtimes hosted on this machine: a workspace directory per intern and a state file in it. The directory
 * is the "disk": it is kept across suspend, archived to a tar.gz and removed on delete.
 */
export class LocalRuntimeDriver implements RuntimeDriver {
  readonly workspacesDir: string;
  /** The runtimes' own records, out of every sandbox's reach: `<DATA_DIR>/runtimes/<internId>.json`. */
  readonly runtimesDir: string;
  readonly archiveDir: string;
  private readonly archiveTimeoutMs: number;
  /** Archives in progress by intern: a retried step joins the running one instead of writing a second. */
  private readonly archiving = new Map<string, Promise<RuntimeStepReply<RuntimeArchiveResult>>>();
  private readonly catalog: ModelCatalog;
  private readonly shell: ShellRunner;
  private readonly now: () => Date;

  /** `<DATA_DIR>/workspaces`, absolute. */
  static workspacesDirOf(dataDir: string): string {
    return resolve(dataDir, 'workspaces');
  }

  constructor(options: LocalRuntimeDriverOptions) {
    this.workspacesDir = LocalRuntimeDriver.workspacesDirOf(options.dataDir);
    this.runtimesDir = resolve(options.dataDir, 'runtimes');
    this.archiveDir = resolve(options.archiveDir);
    this.archiveTimeoutMs = options.archiveTimeoutMs;
    this.catalog = options.catalog;
    this.shell = options.shell;
    this.now = options.now ?? (() => new Date());
  }

  /** The intern's workspace directory. The id becomes a path segment, so only a uuid is accepted. */
  workspacePath(internId: string): string {
    if (!isUuid(internId)) throw new DomainError('invalid_body', `intern id ${JSON.stringify(internId)} is not a uuid`);
    return join(this.workspacesDir, internId.toLowerCase());
  }

  /** The runtime's record of the intern (so its state survives a restart of the runs service). */
  statePath(internId: string): string {
    this.workspacePath(internId);
    return join(this.runtimesDir, `${internId.toLowerCase()}.json`);
  }

  async prepareDisk(internId: string): Promise<RuntimeStepReply> {
    const workspace = this.workspacePath(internId);
    try {
      await mkdir(workspace, { recursive: true });
    } catch (error) {
      if (isUnwritable(error, this.workspacesDir)) {
        return { ok: false, message: `workspace disk ${workspace} cannot be created: ${reasonOf(error)}` };
      }
      throw error;
    }
    return OK;
  }

  async boot(spec: RuntimeBootSpec): Promise<RuntimeStepReply> {
    const workspace = this.workspacePath(spec.internId);
    const resolution = this.catalog.resolve(spec.model);
    if (!resolution.served) return { ok: false, message: resolution.message };
    if (!(await isDirectory(workspace))) {
      return { ok: false, message: `the workspace disk of intern ${spec.internId} is not prepared` };
    }
    await this.writeState(spec.internId, { state: 'running', model: resolution.model, hostname: spec.hostname });
    return OK;
  }

  async health(internId: string): Promise<RuntimeHealthReply> {
    const workspace = this.workspacePath(internId);
    if (!(await isDirectory(workspace))) return { healthy: false, detail: 'no workspace disk' };
    const state = await readState(this.statePath(internId));
    if (state === null) return { healthy: false, detail: 'runtime never booted' };
    if (state.state !== 'running') return { healthy: false, detail: 'runtime stopped' };
    return { healthy: true, detail: `runtime running ${state.model} as ${state.hostname}` };
  }

  async stop(internId: string): Promise<RuntimeStepReply> {
    const state = await readState(this.statePath(internId));
    if (state !== null && state.state !== 'stopped') {
      await this.writeState(internId, { ...state, state: 'stopped' });
    }
    return OK;
  }

  async endRuns(internId: string): Promise<RuntimeStepReply> {
    this.workspacePath(internId);
    // The runs themselves are ended by the run host before this (see RuntimeNatsController.endRuns).
    return OK;
  }

  /**
   * Archives the workspace to `<ARCHIVE_DIR>/<id>-<time>.tar.gz`. Only regular files, directories and symlinks
   * go in: opening a FIFO or a socket the intern left would block for ever. An archive that fails or passes
   * ARCHIVE_TIMEOUT_MS is the step's failure (`workspace_archive_failed: <why>`), which a delete with
   * `acknowledge_workspace_loss` finishes without an archive; a call while one runs joins it.
   */
  archive(internId: string): Promise<RuntimeStepReply<RuntimeArchiveResult>> {
    this.workspacePath(internId); // refuses an id that is not a uuid
    const id = internId.toLowerCase();
    const running = this.archiving.get(id);
    if (running !== undefined) return running;
    const archived = this.writeArchive(id).finally(() => this.archiving.delete(id));
    this.archiving.set(id, archived);
    return archived;
  }

  private async writeArchive(id: string): Promise<RuntimeStepReply<RuntimeArchiveResult>> {
    const workspace = this.workspacePath(id);
    if (!(await isDirectory(workspace))) return { ok: true, archivePath: null };

    const unwritable = (error: unknown): RuntimeStepReply<RuntimeArchiveResult> => ({
      ok: false,
      message: `archive location ${this.archiveDir} cannot be written: ${reasonOf(error)}`,
    });
    try {
      await mkdir(this.archiveDir, { recursive: true });
    } catch (error) {
      if (isUnwritable(error, this.archiveDir)) return unwritable(error);
      throw error;
    }
    await this.removePartialArchives(id);

    // Written under a hidden temporary name and renamed once complete and on disk, so the final name
    // only ever holds a whole archive, whenever the process dies.
    const stamp = this.now().toISOString().replace(/:/g, '');
    const archivePath = join(this.archiveDir, `${id}-${stamp}.tar.gz`);
    const partialPath = join(this.archiveDir, `.${id}-${stamp}.${randomBytes(4).toString('hex')}.partial`);
    const deadline = AbortSignal.timeout(this.archiveTimeoutMs);
    try {
      const pack = createTar({ gzip: true, portable: true, cwd: this.workspacesDir, filter: isArchivable }, [id]);
      await pipeline(pack, createWriteStream(partialPath, { flags: 'wx', mode: 0o600 }), { signal: deadline });
      await syncPath(partialPath);
      await rename(partialPath, archivePath);
      await syncPath(this.archiveDir);
    } catch (error) {
      await discard(partialPath);
      if (deadline.aborted) {
        return { ok: false, message: `the archive was not written within ${this.archiveTimeoutMs / 1000}s (ARCHIVE_TIMEOUT_MS)` };
      }
      if (isUnwritable(error, this.archiveDir)) return unwritable(error);
      // What the workspace holds is the intern's doing: its failure is the step's, not a reason to retry for ever.
      return { ok: false, message: `the workspace could not be read: ${codeOf(error)}` };
    }
    return { ok: true, archivePath };
  }

  async removeDisk(internId: string): Promise<RuntimeStepReply> {
    const workspace = this.workspacePath(internId);
    // Renamed away first, so the workspace disappears at once and a removal cut short is finished by the
    // next attempt.
    const doomed = join(this.workspacesDir, `.removing-${internId.toLowerCase()}`);
    await rm(doomed, { recursive: true, force: true });
    try {
      await rename(workspace, doomed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    await rm(doomed, { recursive: true, force: true });
    await rm(this.statePath(internId), { force: true });
    await this.shell.forget?.(internId.toLowerCase());
    return OK;
  }

  async runShell(internId: string, command: ShellCommand): Promise<string> {
    const workspace = this.workspacePath(internId);
    // Host paths are none of the intern's business: the reason names no directory.
    if (!(await isDirectory(workspace))) return 'the shell could not start: the workspace disk of this intern is gone';
    return this.shell.run({ internId: internId.toLowerCase(), workspace, command: command.command, signal: command.signal });
  }

  /**
   * Leftovers of an archive attempt that died before its rename: only those older than ARCHIVE_TIMEOUT_MS, so
   * an archive another replica is still writing (a step retried there) keeps its file.
   */
  private async removePartialArchives(id: string): Promise<void> {
    const names = await readdir(this.archiveDir);
    const partials = names.filter((name) => name.startsWith(`.${id}-`) && name.endsWith('.partial'));
    const deadBefore = this.now().getTime() - this.archiveTimeoutMs;
    for (const name of partials) {
      const path = join(this.archiveDir, name);
      const written = await stat(path).catch(() => null);
      if (written !== null && written.mtimeMs < deadBefore) await rm(path, { force: true });
    }
  }

  private async writeState(internId: string, state: Omit<RuntimeState, 'updatedAt'>): Promise<void> {
    const record: RuntimeState = { ...state, updatedAt: this.now().toISOString() };
    const target = this.statePath(internId);
    await makePrivateDirectory(this.runtimesDir);
    const temporary = `${target}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      const file = await open(temporary, 'w');
      try {
        await file.writeFile(JSON.stringify(record));
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temporary, target);
    } catch (error) {
      await discard(temporary);
      throw error;
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

async function readState(path: string): Promise<RuntimeState | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
  try {
    const value = JSON.parse(text) as Partial<RuntimeState>;
    if ((value.state === 'running' || value.state === 'stopped') && typeof value.model === 'string') {
      return value as RuntimeState;
    }
  } catch {
    // An unreadable record (written by something else) counts as a runtime that is not running.
  }
  return null;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw error;
  }
}

/** Best-effort removal of a temporary file after a failure; the failure is what gets reported. */
async function discard(path: string): Promise<void> {
  await rm(path, { force: true }).catch(() => undefined);
}

/** Flushes a file or directory entry to stable storage. */
async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** An OS error about `location` itself (or a path leading to it or inside it) that writing cannot overcome. */
function isUnwritable(error: unknown, location: string): boolean {
  const { code, path } = error as NodeJS.ErrnoException;
  if (code === undefined || !UNWRITABLE_CODES.has(code) || typeof path !== 'string') return false;
  const target = resolve(path);
  return target === location || target.startsWith(location + sep) || location.startsWith(target + sep);
}

/** The OS error code (`EACCES`), naming no host path. */
function codeOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : 'unexpected error';
}

/** The OS message, e.g. `ENOTDIR: not a directory, mkdir '/x/archives'` (not `instanceof`: errors may cross realms). */
function reasonOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}
