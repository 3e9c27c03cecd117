import { execFile } from 'node:child_process';
import { chmod, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { Logger } from '@nestjs/common';
import { bwrapArguments, launchArguments, prlimitArguments, SANDBOX_PATH, sandboxEtcFiles, type SandboxEgress, type StagingBind } from './bwrap-arguments';
import type { EgressGrant } from './sandbox-egress';
import type { ProcessPlan } from './process-runner';
import type { InternCgroup } from './intern-cgroups';
import { firstUnsearchableAncestor, probeSandboxHost, SandboxUnavailable } from './sandbox-host';
import type { SandboxHost } from './sandbox-host';
import type { WorkspaceDisks } from '../workspace-disk';

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

export interface SandboxLauncherOptions {
  /** Where the workspaces live (`<DATA_DIR>/workspaces`). */
  workspacesDir: string;
  limits: SandboxLimits;
  /** What the workspaces live on: bounds each command's writes. */
  disks: Pick<WorkspaceDisks, 'fileSizeLimit'>;
  /** Where bwrap and prlimit are looked for (default: PATH, then the system directories). */
  toolDirectories?: string[];
  /** Where the cgroup hierarchy is mounted (default /sys/fs/cgroup). */
  cgroupRoot?: string;
  /** RUNTIME_NETWORK=egress: the host must be able to bridge an egress listener into a sandbox. */
  egress: boolean;
}

/** One command as the sandbox runs it. */
export interface SandboxCommand {
  /** The cgroup it runs in: the intern's id (or the self-test's). */
  cgroupName: string;
  uid: number;
  /** The workspace on the host (bound at /workspace, the command's working directory). */
  workspace: string;
  /** Shell text. */
  command: string;
  /** `$1`, `$2`, ... of the command: paths and other data, never spliced into its text. */
  commandArgs?: string[];
  /** The command's egress listener; absent: no network at all. */
  egress?: EgressGrant;
  /** Run under a pseudo-terminal (sandbox-pty.ts): bwrap keeps it as the controlling terminal, TERM is set. */
  terminal?: { term: string };
}

/** A sandbox ready to start: run it with runProcess (collected output) or streamProcess (pipes). */
export interface SandboxLaunch {
  plan: ProcessPlan;
  /** Index in `plan.extraFds` of bwrap's `--json-status-fd` (read it with `parseStatus`). */
  statusFd: number;
  cgroup: InternCgroup;
}

/** Why no sandbox could be built; `message` is what a caller may show (it names no host path). */
export class SandboxRefusal {
  constructor(readonly message: string) {}
}

/** Indexes of the extra fds in the process plan (fd 3 + index in the bwrap process). */
const FD = { passwd: 0, group: 1, hosts: 2, status: 3, seccomp: 4 } as const;
export const SANDBOX_UNAVAILABLE = 'sandbox unavailable';

/**
 * The launch of one sandboxed command (CONTRACT section 15), built once and run however the caller needs: the
 * intern's cgroup joined as root, staging binds for what its uid cannot reach by path, setpriv to its uid, prlimit
 * around bwrap and RLIMIT_FSIZE inside it. Shared by the shell tool (output collected) and the files routes
 * (streamed), and meant for a terminal next.
 */
export class SandboxLauncher {
  readonly host: Promise<SandboxHost | SandboxUnavailable>;
  private readonly logger = new Logger('Sandbox');

  constructor(private readonly options: SandboxLauncherOptions) {
    this.host = probeSandboxHost(options.toolDirectories, options.cgroupRoot, options.egress).catch((error: unknown) => {
      if (error instanceof SandboxUnavailable) return error;
      throw error;
    });
  }

  get limits(): SandboxLimits {
    return this.options.limits;
  }

  /** The host's tools, or why there is no sandbox here. */
  async ready(): Promise<SandboxHost | SandboxRefusal> {
    const host = await this.host;
    return host instanceof SandboxUnavailable ? new SandboxRefusal(`${SANDBOX_UNAVAILABLE}: ${host.message}`) : host;
  }

  /**
   * The workspace belongs to the intern's uid, mode 0700; a workspace made before sandboxing (owned by the
   * service) is handed over once, symlinks not followed.
   */
  async prepareWorkspace(workspace: string, uid: number): Promise<void> {
    // Searchable, not listable: a sandbox reaches its own workspace by path and learns no other intern's id.
    await chmod(this.options.workspacesDir, 0o711);
    const current = await stat(workspace);
    if (current.uid !== uid || current.gid !== uid) await run('chown', ['-R', '-P', `${uid}:${uid}`, workspace], { timeout: 300_000 });
    if ((current.mode & 0o777) !== 0o700) await chmod(workspace, 0o700);
  }

  async launch(host: SandboxHost, command: SandboxCommand): Promise<SandboxLaunch | SandboxRefusal> {
    const { cgroupName, uid, workspace } = command;
    // bwrap resolves the workspace by path as the intern's uid: below a directory others cannot search (a clone in
    // /root), the launch binds it onto a reachable staging directory in a mount namespace of its own. The egress
    // socket and CA bundle are always reached that way: they lie in the services' own directories.
    const unsearchable = await firstUnsearchableAncestor(workspace);
    const binds: StagingBind[] = [];
    let workspaceSource = workspace;
    if (unsearchable !== null) {
      if (host.reach === null) {
        this.logger.error(`${unsearchable} is not searchable by others, so no sandbox can reach a workspace below it (chmod o+x ${unsearchable}, or install util-linux's unshare)`);
        return new SandboxRefusal(`${SANDBOX_UNAVAILABLE}: the workspaces directory is not reachable by sandbox users (the runs service's log names it)`);
      }
      binds.push({ source: workspace, target: host.reach.stagingDir });
      workspaceSource = host.reach.stagingDir;
    }
    let egress: SandboxEgress | undefined;
    if (command.egress !== undefined && host.reach !== null && host.socatPath !== null) {
      binds.push({ source: command.egress.socketPath, target: host.reach.egressSocket }, { source: command.egress.caBundlePath, target: host.reach.caBundle });
      egress = { socketPath: host.reach.egressSocket, caBundlePath: host.reach.caBundle, socatPath: host.socatPath, secretEnv: command.egress.secretEnv };
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
      command: command.command,
      commandArgs: command.commandArgs,
      egress,
      terminal: command.terminal,
    });
    let cgroup: InternCgroup;
    try {
      cgroup = await host.cgroups.prepare(cgroupName, {
        memoryBytes: limits.internMemoryBytes,
        cpuMillicores: limits.cpuMillicores,
        maxProcesses: limits.maxProcesses,
      });
    } catch (error) {
      this.logger.error(`the intern's cgroup could not be prepared: ${(error as Error).message}`);
      return new SandboxRefusal(`${SANDBOX_UNAVAILABLE}: the intern's cgroup could not be prepared (the runs service's log says why)`);
    }
    const staging = host.reach === null ? undefined : { unsharePath: host.reach.unsharePath, binds };
    const launch = launchArguments({ procsFiles: cgroup.procsFiles, setprivPath: host.setprivPath, uid, staging }, [
      host.prlimitPath,
      ...prlimitArguments({ maxProcesses: limits.maxProcesses, memoryBytes: limits.memoryBytes }, host.bwrapPath),
      ...bwrap,
    ]);
    return {
      plan: {
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
      statusFd: FD.status,
      cgroup,
    };
  }
}

/**
 * bwrap's `--json-status-fd` documents, one per line: `{"child-pid": n, ...}` then `{"exit-code": n}`. No exit
 * code: the command never ran (bwrap could not build the sandbox) or was killed.
 */
export function parseStatus(text: string): { exitCode: number | null } {
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
