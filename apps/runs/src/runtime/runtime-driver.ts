import type { RuntimeArchiveResult, RuntimeHealthReply, RuntimeStepReply } from '@interns/contracts';

/** One command of the shell tool. */
export interface ShellCommand {
  command: string;
  /** The run the command is a tool call of. */
  runId?: string | null;
  /** Aborted when the run is cancelled: every process the command started is ended. */
  signal: AbortSignal;
}

export interface RuntimeBootSpec {
  internId: string;
  /** The intern's model, or null for DEFAULT_MODEL. */
  model: string | null;
  hostname: string;
}

/**
 * Hosts intern runtimes: the provisioning steps (prepare disk, boot, health) and the teardown steps
 * (end runs, stop, archive, remove disk) lifecycle drives one at a time.
 *
 * Every operation is idempotent and safe to repeat after a crash at any point, because lifecycle retries
 * a step whose answer it did not get. `{ ok: false, message }` is a definitive failure of the step (a retry
 * would fail the same way); a thrown error is unexpected, and the caller sees it as transient and retries.
 */
export interface RuntimeDriver {
  /** Creates the intern's workspace disk; keeps it (and its files) when it exists. */
  prepareDisk(internId: string): Promise<RuntimeStepReply>;
  /** Starts the runtime on the prepared disk with the effective model; fails when no provider serves it. */
  boot(spec: RuntimeBootSpec): Promise<RuntimeStepReply>;
  /** Healthy only when the disk exists and the runtime is running. */
  health(internId: string): Promise<RuntimeHealthReply>;
  /** Stops the runtime, keeping the disk; nothing to do when there is no runtime. */
  stop(internId: string): Promise<RuntimeStepReply>;
  /** Ends the intern's active runs. */
  endRuns(internId: string): Promise<RuntimeStepReply>;
  /** Writes a compressed archive of the workspace; `archivePath` is null when there is no workspace. */
  archive(internId: string): Promise<RuntimeStepReply<RuntimeArchiveResult>>;
  /** Deletes the workspace disk; nothing to do when it is gone. */
  removeDisk(internId: string): Promise<RuntimeStepReply>;
  /**
   * Runs one shell command in the intern's runtime (its workspace is the working directory) and answers what
   * the model sees: the output and a note per notable ending. A command that cannot run (no sandbox, no
   * workspace) is answered with the reason, never thrown.
   */
  runShell(internId: string, command: ShellCommand): Promise<string>;
}

/** Injection token of the service's RuntimeDriver. */
export const RUNTIME_DRIVER = Symbol('RUNTIME_DRIVER');
