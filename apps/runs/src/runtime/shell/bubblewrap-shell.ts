import { execFile } from 'node:child_process';
import { chmod, mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Logger } from '@nestjs/common';
import { bwrapArguments, launchArguments, prlimitArguments, SANDBOX_PATH, sandboxEtcFiles, type SandboxEgress, type StagingBind } from './bwrap-arguments';
import type { EgressGrant, SandboxEgressSource } from './sandbox-egress';
import { formatShellResult, runProcess } from './process-runner';
import type { ProcessResult } from './process-runner';
import { markDescriptorsCloseOnExec } from './descriptor-hygiene';
import type { InternCgroup } from './intern-cgroups';
import { firstUnsearchableAncestor, probeSandboxHost, SandboxUnavailable } from './sandbox-host';
import type { SandboxHost } from './sandbox-host';
import type { SandboxUidSource } from './sandbox-users';
import type { ShellRequest, ShellRunner } from './shell-runner';
import { quotaNote, type WorkspaceDisks } from '../workspace-disk';

const run = promisify(execFile);

export interface SandboxLimits {
  timeoutMs: number;
  outputLimitBytes: number;
  /** SHELL_MAX_PROCESSES: of the intern (its cgroup's pids.max and its uid's RLIMIT_NPROC). */
  maxProcesses: number;
  /** SHELL_MEMORY_BYTES: address space of each process (RLIMIT_AS). */
  memoryBytes: number;
  /** INTERN_MEMORY_BYTES: RAM of all the intern's processes and tmpfs together (its cgroup). */
  internMemoryBytes: number;
  /** INTERN_CPU_MILLICORES: CPU of all the intern's processes together (its cgroup). */
  cpuMillicores: number;
  tmpBytes: number;
}

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

/** Indexes of the extra fds in the process plan (fd 3 + index in the bwrap process). */
const FD = { passwd: 0, group: 1, hosts: 2, status: 3, seccomp: 4 } as const;
const UNAVAILABLE = 'sandbox unavailable';
/** The cgroup the start-up self-test runs in: nobody's. */
const SELF_TEST = 'self-test';

/**
 * Every shell command in a bubblewrap sandbox (CONTRACT section 15), as the intern's own host uid, in its
 * cgroup, with RLIMIT_NPROC / RLIMIT_AS set by prlimit around bwrap and RLIMIT_FSIZE (the disk's per-file
 * bound) inside it. Fails closed: when the sandbox cannot be built, nothing runs and the result says why.
 */
export class BubblewrapShell implements ShellRunner {
  private readonly logger = new Logger('Sandbox');
  private readonly host: Promise<SandboxHost | SandboxUnavailable>;

  constructor(private readonly options: BubblewrapShellOptions) {
    this.host = probeSandboxHost(options.toolDirectories, options.cgroupRoot, options.egress !== undefined).catch((error: unknown) => {
      if (error instanceof SandboxUnavailable) return error;
      throw error;
    });
  }

  /**
   * Builds a sandbox once and runs `id -u` in it: null when it works, else why not. Run at start, so an
   * operator reads the reason in the log before an intern's shell does.
   */
  async selfTest(): Promise<string | null> {
    const host = await this.host;
    if (host instanceof SandboxUnavailable) return `${UNAVAILABLE}: ${host.message}`;
    // Beside the workspaces (same ancestors to search), never among them: it is nobody's workspace.
    const workspace = join(dirname(this.options.workspacesDir), '.sandbox-self-test');
    await mkdir(this.options.workspacesDir, { recursive: true });
    await rm(workspace, { recursive: true, force: true });
    await mkdir(workspace);
    let answer: string;
    try {
      await this.prepareWorkspace(workspace, this.options.probeUid);
      answer = await this.runAs(host, { cgroupName: SELF_TEST, uid: this.options.probeUid, workspace, command: 'id -u', signal: new AbortController().signal });
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
    if (answer.startsWith(UNAVAILABLE)) return answer;
    return answer.trim() === String(this.options.probeUid) ? null : `${UNAVAILABLE}: the self-test answered ${JSON.stringify(answer)}`;
  }

  async run(request: ShellRequest): Promise<string> {
    const host = await this.host;
    if (host instanceof SandboxUnavailable) return `${UNAVAILABLE}: ${host.message}`;
    const uid = await this.options.users.uidOf(request.internId);
    await this.prepareWorkspace(request.workspace, uid);
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

  /** Removes what the sandbox keeps of an intern beside its workspace (its cgroup), once it is deleted. */
  async forget(internId: string): Promise<void> {
    const host = await this.host;
    if (!(host instanceof SandboxUnavailable)) await host.cgroups.remove(internId);
  }

  private async runAs(host: SandboxHost, run: SandboxCommand): Promise<string> {
    const { cgroupName, uid, workspace, command, signal } = run;
    // bwrap resolves the workspace by path as the intern's uid: below a directory others cannot search (a clone in
    // /root), the launch binds it onto a reachable staging directory in a mount namespace of its own. The egress
    // socket and CA bundle are always reached that way: they lie in the services' own directories.
    const unsearchable = await firstUnsearchableAncestor(workspace);
    const binds: StagingBind[] = [];
    let workspaceSource = workspace;
    if (unsearchable !== null) {
      if (host.reach === null) {
        this.logger.error(`${unsearchable} is not searchable by others, so no sandbox can reach a workspace below it (chmod o+x ${unsearchable}, or install util-linux's unshare)`);
        return `${UNAVAILABLE}: the workspaces directory is not reachable by sandbox users (the runs service's log names it)`;
      }
      binds.push({ source: workspace, target: host.reach.stagingDir });
      workspaceSource = host.reach.stagingDir;
    }
    let egress: SandboxEgress | undefined;
    if (run.egress !== undefined && host.reach !== null && host.socatPath !== null) {
      binds.push({ source: run.egress.socketPath, target: host.reach.egressSocket }, { source: run.egress.caBundlePath, target: host.reach.caBundle });
      egress = { socketPath: host.reach.egressSocket, caBundlePath: host.reach.caBundle, socatPath: host.socatPath, secretEnv: run.egress.secretEnv };
    }

    const { limits, disks } = this.options;
    const hostname = 'intern';
    const etc = sandboxEtcFiles(uid, uid, hostname);
    const bwrap = bwrapArguments({
      workspace: workspaceSource,
      hostname,
      systemPaths: host.systemPaths,
      etcPaths: host.etcPaths,
      tmpBytes: limits.tmpBytes,
      fileSizeBytes: await disks.fileSizeLimit(workspace),
      prlimitPath: host.prlimitPath,
      fds: {
        passwd: 3 + FD.passwd,
        group: 3 + FD.group,
        hosts: 3 + FD.hosts,
        status: 3 + FD.status,
        seccomp: 3 + FD.seccomp,
      },
      command,
      egress,
    });
    let cgroup: InternCgroup;
    let oomKillsBefore: number;
    try {
      cgroup = await host.cgroups.prepare(cgroupName, {
        memoryBytes: limits.internMemoryBytes,
        cpuMillicores: limits.cpuMillicores,
        maxProcesses: limits.maxProcesses,
      });
      oomKillsBefore = await cgroup.oomKills();
    } catch (error) {
      this.logger.error(`the intern's cgroup could not be prepared: ${(error as Error).message}`);
      return `${UNAVAILABLE}: the intern's cgroup could not be prepared (the runs service's log says why)`;
    }
    const staging = host.reach === null ? undefined : { unsharePath: host.reach.unsharePath, binds };
    const launch = launchArguments({ procsFiles: cgroup.procsFiles, setprivPath: host.setprivPath, uid, staging }, [
      host.prlimitPath,
      ...prlimitArguments({ maxProcesses: limits.maxProcesses, memoryBytes: limits.memoryBytes }, host.bwrapPath),
      ...bwrap,
    ]);
    let result: ProcessResult;
    try {
      markDescriptorsCloseOnExec();
      result = await runProcess(
        {
          ...launch,
          // bwrap's own environment is what its PID 1 shows in /proc: nothing of the service's.
          env: { PATH: SANDBOX_PATH },
          extraFds: [
            { kind: 'input', data: etc.passwd },
            { kind: 'input', data: etc.group },
            { kind: 'input', data: etc.hosts },
            { kind: 'output' },
            { kind: 'input', data: host.syscallFilter },
          ],
        },
        { timeoutMs: limits.timeoutMs, outputLimitBytes: limits.outputLimitBytes, signal },
      );
    } catch (error) {
      return `${UNAVAILABLE}: ${(error as Error).message}`;
    }

    const status = parseStatus(result.fdOutputs.get(FD.status) ?? '');
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
    const full = quotaNote(await disks.usage(workspace), disks.quota);
    if (full !== null) notes.push(full);
    const exitCode = stoppedByUs ? null : status.exitCode;
    return formatShellResult({ ...result, exitCode }, limits, notes);
  }

  /**
   * The workspace belongs to the intern's uid, mode 0700; a workspace made before sandboxing (owned by the
   * service) is handed over once, symlinks not followed.
   */
  private async prepareWorkspace(workspace: string, uid: number): Promise<void> {
    // Searchable, not listable: a sandbox reaches its own workspace by path and learns no other intern's id.
    await chmod(this.options.workspacesDir, 0o711);
    const current = await stat(workspace);
    if (current.uid !== uid || current.gid !== uid) await run('chown', ['-R', '-P', `${uid}:${uid}`, workspace], { timeout: 300_000 });
    if ((current.mode & 0o777) !== 0o700) await chmod(workspace, 0o700);
  }
}

/** One command as the sandbox runs it. */
interface SandboxCommand {
  cgroupName: string;
  uid: number;
  workspace: string;
  command: string;
  signal: AbortSignal;
  egress?: EgressGrant;
}

/** bwrap's `--json-status-fd` documents, one per line: `{"child-pid": n, ...}` then `{"exit-code": n}`. */
function parseStatus(text: string): { exitCode: number | null } {
  let exitCode: number | null = null;
  for (const line of text.split('\n')) {
    if (!line.trim().startsWith('{')) continue;
    try {
      const document = JSON.parse(line) as { 'exit-code'?: unknown };
      if (typeof document['exit-code'] === 'number') exitCode = document['exit-code'];
    } catch {
      // A partial document (bwrap killed mid-write) says nothing.
    }
  }
  return { exitCode };
}
