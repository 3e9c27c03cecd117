import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { RuntimeArchiveResult, RuntimeHealthReply, RuntimeStepReply } from '@interns/contracts';
import { Logger } from '@nestjs/common';
import { DomainError, isUuid } from '@interns/contracts';
import { makePrivateDirectory } from '@interns/files';
import type { ModelCatalog } from './model-catalog';
import type { RuntimeBootSpec, RuntimeDriver, ShellCommand } from './runtime-driver';
import { discard, isUnwritable, reasonOf } from './runtime-files';
import type { ShellRunner } from './shell/shell-runner';
import { WorkspaceArchiver } from './workspace-archiver';
import { WorkspaceDiskUnavailable, type WorkspaceDisks } from './workspace-disk';

export { LEGACY_RUNTIME_STATE_FILE } from './runtime-files';

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
  /** What each workspace lives on (WORKSPACE_DISK): an image of its own, or a directory. */
  disks: WorkspaceDisks;
  now?: () => Date;
}

const OK: RuntimeStepReply = { ok: true };

/**
 * Runtimes hosted on this machine: a workspace per intern (on its WorkspaceDisks disk, attached at
 * `<DATA_DIR>/workspaces/<id>`) and a record of the runtime beside it. The disk is kept across suspend,
 * archived to a tar.gz and removed on delete.
 */
export class LocalRuntimeDriver implements RuntimeDriver {
  readonly workspacesDir: string;
  /** The runtimes' own records, out of every sandbox's reach: `<DATA_DIR>/runtimes/<internId>.json`. */
  readonly runtimesDir: string;
  readonly archiveDir: string;
  private readonly archiver: WorkspaceArchiver;
  private readonly catalog: ModelCatalog;
  private readonly shell: ShellRunner;
  private readonly disks: WorkspaceDisks;
  private readonly logger = new Logger('LocalRuntime');
  private readonly now: () => Date;

  /** `<DATA_DIR>/workspaces`, absolute. */
  static workspacesDirOf(dataDir: string): string {
    return resolve(dataDir, 'workspaces');
  }

  constructor(options: LocalRuntimeDriverOptions) {
    this.workspacesDir = LocalRuntimeDriver.workspacesDirOf(options.dataDir);
    this.runtimesDir = resolve(options.dataDir, 'runtimes');
    this.archiveDir = resolve(options.archiveDir);
    this.catalog = options.catalog;
    this.shell = options.shell;
    this.disks = options.disks;
    this.now = options.now ?? (() => new Date());
    this.archiver = new WorkspaceArchiver({
      workspacesDir: this.workspacesDir,
      archiveDir: this.archiveDir,
      timeoutMs: options.archiveTimeoutMs,
      now: this.now,
      // After a restart the disk is attached again first, so the archive holds its files, not an empty mount point.
      attach: async (id) => {
        const attached = await this.attached(id, this.workspacePath(id));
        return typeof attached === 'string' ? attached : null;
      },
    });
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
      await mkdir(this.workspacesDir, { recursive: true });
      await this.disks.create(internId.toLowerCase(), workspace);
    } catch (error) {
      if (error instanceof WorkspaceDiskUnavailable) return { ok: false, message: `workspace disk ${workspace} cannot be created: ${error.message}` };
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
    const attached = await this.attached(spec.internId, workspace);
    if (typeof attached === 'string') return { ok: false, message: attached };
    if (!attached) {
      return { ok: false, message: `the workspace disk of intern ${spec.internId} is not prepared` };
    }
    await this.writeState(spec.internId, { state: 'running', model: resolution.model, hostname: spec.hostname });
    return OK;
  }

  async health(internId: string): Promise<RuntimeHealthReply> {
    const workspace = this.workspacePath(internId);
    const attached = await this.attached(internId, workspace);
    if (typeof attached === 'string') return { healthy: false, detail: attached };
    if (!attached) return { healthy: false, detail: 'no workspace disk' };
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

  /** The teardown's archive of the workspace (WorkspaceArchiver). */
  archive(internId: string): Promise<RuntimeStepReply<RuntimeArchiveResult>> {
    this.workspacePath(internId); // refuses an id that is not a uuid
    return this.archiver.archive(internId.toLowerCase());
  }

  async removeDisk(internId: string): Promise<RuntimeStepReply> {
    const workspace = this.workspacePath(internId);
    await this.disks.remove(internId.toLowerCase(), workspace);
    await rm(this.statePath(internId), { force: true });
    await this.shell.forget?.(internId.toLowerCase());
    return OK;
  }

  async runShell(internId: string, command: ShellCommand): Promise<string> {
    const workspace = this.workspacePath(internId);
    // Host paths are none of the intern's business: the reasons name no directory.
    let attached: boolean;
    try {
      attached = await this.disks.attach(internId.toLowerCase(), workspace);
    } catch (error) {
      this.logger.error(`the workspace disk of intern ${internId} could not be attached: ${(error as Error).message}`);
      return "the shell could not start: the workspace disk of this intern could not be attached (the runs service's log says why)";
    }
    if (!attached) return 'the shell could not start: the workspace disk of this intern is gone';
    return this.shell.run({ internId: internId.toLowerCase(), runId: command.runId, workspace, command: command.command, signal: command.signal });
  }

  /**
   * The intern's workspace with its disk attached (a suspended intern's too: the files routes use it), or null when
   * the intern has no disk. Throws WorkspaceDiskUnavailable when it cannot be attached (another replica's lease).
   */
  async attachedWorkspace(internId: string): Promise<string | null> {
    const workspace = this.workspacePath(internId);
    return (await this.disks.attach(internId.toLowerCase(), workspace)) ? workspace : null;
  }

  /** Detaches the disks this process attached (at shutdown). */
  detachDisks(): Promise<void> {
    return this.disks.detachAll();
  }

  /**
   * Attaches the intern's disk if it is not: true when attached, false when the intern has none, or why it
   * cannot be attached (the step's definitive failure).
   */
  private async attached(internId: string, workspace: string): Promise<boolean | string> {
    try {
      return await this.disks.attach(internId.toLowerCase(), workspace);
    } catch (error) {
      if (error instanceof WorkspaceDiskUnavailable) return `the workspace disk of intern ${internId} cannot be attached: ${error.message}`;
      throw error;
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

