import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Logger } from '@nestjs/common';
import { DomainError, type TerminalSize } from '@interns/contracts';
import type { EgressGrant, SandboxEgressSource } from './sandbox-egress';
import { formatShellResult, runProcess } from './process-runner';
import type { ProcessResult } from './process-runner';
import { markDescriptorsCloseOnExec } from './descriptor-hygiene';
import { parseStatus, SANDBOX_UNAVAILABLE, SandboxLauncher, SandboxRefusal, type SandboxCommand, type SandboxLimits } from './sandbox-launch';
import type { SandboxHost } from './sandbox-host';
import { spawnPty, type PtyProcess } from './sandbox-pty';
import type { SandboxUidSource } from './sandbox-users';
import type { ShellRequest, ShellRunner } from './shell-runner';
import { quotaNote, type WorkspaceDisks } from '../workspace-disk';

export type { SandboxLimits } from './sandbox-launch';

export interface BubblewrapShellOptions {
  users: SandboxUidSource;
  /** Where the workspaces live (`<DATA_DIR>/workspaces`). */
  workspacesDir: string;
  limits: SandboxLimits;
  /** What the workspaces live on: bounds each command's writes and says how full a workspace is after it. */
  disks: Pick<WorkspaceDisks, 'quota' | 'fileSizeLimit' | 'usage'>;
  /** The uid the start-up self-test runs as: never an intern's (theirs start above it). */
  probeUid: number;
  /** Where bwrap and prlimit are looked for (default: PATH, then the system directories). */
  toolDirectories?: string[];
  /** Where the cgroup hierarchy is mounted (default /sys/fs/cgroup). */
  cgroupRoot?: string;
  /** RUNTIME_NETWORK=egress: each command's listener of the egress proxy; absent: no network at all. */
  egress?: SandboxEgressSource;
}

const UNAVAILABLE = SANDBOX_UNAVAILABLE;
/** A terminal's login shell (interface section 20): bash reads the profile, TERM as xterm.js and most clients speak. */
const TERMINAL_COMMAND = 'exec /bin/bash -l';
const TERMINAL_TERM = 'xterm-256color';
/**
 * How often a terminal renews its egress listener, which otherwise expires after the longest a shell command may run
 * (and a minute): well inside that, so a missed renewal is retried in time.
 */
const EGRESS_RENEW_MS = 30_000;
/** The cgroup the start-up self-test runs in: nobody's. */
const SELF_TEST = 'self-test';

/**
 * Every shell command in a bubblewrap sandbox (CONTRACT section 15), as the intern's own host uid, in its
 * cgroup, with RLIMIT_NPROC / RLIMIT_AS set by prlimit around bwrap and RLIMIT_FSIZE (the disk's per-file
 * bound) inside it. Fails closed: when the sandbox cannot be built, nothing runs and the result says why.
 */
export class BubblewrapShell implements ShellRunner {
  private readonly logger = new Logger('Sandbox');
  /** Builds each command's launch; the files routes launch their commands with it too. */
  readonly launcher: SandboxLauncher;

  constructor(private readonly options: BubblewrapShellOptions) {
    this.launcher = new SandboxLauncher({
      workspacesDir: options.workspacesDir,
      limits: options.limits,
      disks: options.disks,
      toolDirectories: options.toolDirectories,
      cgroupRoot: options.cgroupRoot,
      egress: options.egress !== undefined,
    });
  }

  /** The uid of the intern's sandbox, its workspace handed over to that uid. */
  async sandboxUser(internId: string, workspace: string): Promise<number> {
    const uid = await this.options.users.uidOf(internId);
    await this.launcher.prepareWorkspace(workspace, uid);
    return uid;
  }

  /**
   * Builds a sandbox once and runs `id -u` in it: null when it works, else why not. Run at start, so an
   * operator reads the reason in the log before an intern's shell does.
   */
  async selfTest(): Promise<string | null> {
    const host = await this.launcher.ready();
    if (host instanceof SandboxRefusal) return host.message;
    // Beside the workspaces (same ancestors to search), never among them: it is nobody's workspace.
    const workspace = join(dirname(this.options.workspacesDir), '.sandbox-self-test');
    await mkdir(this.options.workspacesDir, { recursive: true });
    await rm(workspace, { recursive: true, force: true });
    await mkdir(workspace);
    let answer: string;
    try {
      await this.launcher.prepareWorkspace(workspace, this.options.probeUid);
      answer = await this.runAs(host, { cgroupName: SELF_TEST, uid: this.options.probeUid, workspace, command: 'id -u', signal: new AbortController().signal });
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
    if (answer.startsWith(UNAVAILABLE)) return answer;
    return answer.trim() === String(this.options.probeUid) ? null : `${UNAVAILABLE}: the self-test answered ${JSON.stringify(answer)}`;
  }

  async run(request: ShellRequest): Promise<string> {
    const host = await this.launcher.ready();
    if (host instanceof SandboxRefusal) return host.message;
    const uid = await this.sandboxUser(request.internId, request.workspace);
    const command = { cgroupName: request.internId, uid, workspace: request.workspace, command: request.command, signal: request.signal };
    const { egress } = this.options;
    if (egress === undefined) return this.runAs(host, command);
    // The command's own listener of the egress proxy: its socket is the command's identity, handed to its uid.
    let grant: EgressGrant;
    try {
      grant = await egress.open(request.internId, request.runId ?? null, uid);
    } catch (error) {
      this.logger.error(`no egress listener for intern ${request.internId}: ${(error as Error).message}`);
      return "egress unavailable: the egress proxy did not answer, so the command did not run (the runs service's log says why)";
    }
    try {
      return await this.runAs(host, { ...command, egress: grant });
    } finally {
      await egress.close(grant);
    }
  }

  /**
   * A login shell under a pseudo-terminal in the intern's sandbox: the shell tool's user, namespaces, limits, cgroup and
   * egress (a listener of its own, renewed while it lives and closed once it ended: `finished` settles after that).
   * Refusals are DomainErrors: no sandbox on this host (configuration_error), no egress proxy (internal_error).
   */
  async openTerminal(internId: string, workspace: string, size: TerminalSize): Promise<PtyProcess> {
    const host = await this.launcher.ready();
    if (host instanceof SandboxRefusal) throw new DomainError('configuration_error', host.message);
    const uid = await this.sandboxUser(internId, workspace);
    const { egress } = this.options;
    let grant: EgressGrant | undefined;
    if (egress !== undefined) {
      try {
        grant = await egress.open(internId, null, uid);
      } catch (error) {
        this.logger.error(`no egress listener for a terminal of intern ${internId}: ${(error as Error).message}`);
        throw new DomainError('internal_error', "egress unavailable: the egress proxy did not answer, so the terminal did not open (the runs service's log says why)");
      }
    }
    const release = async () => {
      if (egress !== undefined && grant !== undefined) await egress.close(grant);
    };
    let terminal: PtyProcess;
    try {
      const launch = await this.launcher.launch(host, { cgroupName: internId, uid, workspace, command: TERMINAL_COMMAND, terminal: { term: TERMINAL_TERM }, egress: grant });
      if (launch instanceof SandboxRefusal) throw new DomainError('configuration_error', launch.message);
      terminal = await spawnPty(launch.plan, size);
    } catch (error) {
      await release();
      throw error;
    }
    if (egress === undefined || grant === undefined) return terminal;
    const kept = grant;
    const renewal = setInterval(() => {
      void egress.renew(kept).then((renewed) => {
        if (!renewed) this.logger.warn(`the egress listener of a terminal of intern ${internId} is gone (its egress process restarted?): the terminal has no network`);
      });
    }, EGRESS_RENEW_MS).unref();
    return {
      ...terminal,
      finished: terminal.finished.then(async (exit) => {
        clearInterval(renewal);
        await release();
        return exit;
      }),
    };
  }

  /** Removes what the sandbox keeps of an intern beside its workspace (its cgroup), once it is deleted. */
  async forget(internId: string): Promise<void> {
    const host = await this.launcher.ready();
    if (!(host instanceof SandboxRefusal)) await host.cgroups.remove(internId);
  }

  private async runAs(host: SandboxHost, run: SandboxCommand & { signal: AbortSignal }): Promise<string> {
    const { limits, disks } = this.options;
    const launch = await this.launcher.launch(host, run);
    if (launch instanceof SandboxRefusal) return launch.message;
    const { plan, statusFd, cgroup } = launch;
    let oomKillsBefore: number;
    try {
      oomKillsBefore = await cgroup.oomKills();
    } catch (error) {
      this.logger.error(`the intern's cgroup could not be read: ${(error as Error).message}`);
      return `${UNAVAILABLE}: the intern's cgroup could not be prepared (the runs service's log says why)`;
    }
    let result: ProcessResult;
    try {
      markDescriptorsCloseOnExec();
      result = await runProcess(plan, { timeoutMs: limits.timeoutMs, outputLimitBytes: limits.outputLimitBytes, signal: run.signal });
    } catch (error) {
      return `${UNAVAILABLE}: ${(error as Error).message}`;
    }

    const status = parseStatus(result.fdOutputs.get(statusFd) ?? '');
    const stoppedByUs = result.timedOut || result.cancelled || result.truncated;
    if (status.exitCode === null && !stoppedByUs) {
      // bwrap could not build the sandbox (it exits 1 with `bwrap: <why>`): the command never ran.
      const why = result.output.trim() || `bwrap exited with ${result.exitCode ?? 'a signal'}`;
      this.logger.error(`the sandbox could not be built: ${why}`);
      return `${UNAVAILABLE}: ${why}`;
    }
    const notes: string[] = [];
    // Counted per intern: a kill during this command may have hit another command of the same intern.
    if ((await cgroup.oomKills()) > oomKillsBefore) notes.push('[memory limit reached]');
    const full = quotaNote(await disks.usage(run.workspace), disks.quota);
    if (full !== null) notes.push(full);
    const exitCode = stoppedByUs ? null : status.exitCode;
    return formatShellResult({ ...result, exitCode }, limits, notes);
  }
}
