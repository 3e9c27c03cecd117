import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { PlatformConfig, Subjects } from '@interns/contracts';
import { BubblewrapShell } from './bubblewrap-shell';
import { NatsSandboxEgress } from './sandbox-egress';
import { SandboxUsers } from './sandbox-users';
import type { ShellRunner } from './shell-runner';
import { UnsandboxedShell } from './unsandboxed-shell';
import type { WorkspaceDisks } from '../workspace-disk';

/**
 * The shell runner RUNTIME_SANDBOX asks for; `off` is refused with NODE_ENV=production and warned about otherwise.
 * With the sandbox, RUNTIME_NETWORK=egress gives each command the egress proxy as its only way out (over `nc`).
 */
export function shellRunnerFor(
  config: PlatformConfig,
  dataSource: DataSource,
  workspacesDir: string,
  disks: WorkspaceDisks,
  nc: NatsConnection,
  subjects: Subjects,
): ShellRunner {
  const limits = { timeoutMs: config.shellTimeoutMs, outputLimitBytes: config.shellOutputLimitBytes };
  if (config.runtimeSandbox === 'off') {
    if (config.nodeEnv === 'production') {
      throw new Error('RUNTIME_SANDBOX=off is for development only and is refused with NODE_ENV=production');
    }
    new Logger('Sandbox').warn(
      "RUNTIME_SANDBOX=off: interns' shell commands run UNSANDBOXED as this service's own user, with its files, processes and network. Development only.",
    );
    return new UnsandboxedShell(limits);
  }
  return new BubblewrapShell({
    users: new SandboxUsers(dataSource, config.sandboxUidBase),
    workspacesDir,
    disks,
    probeUid: config.sandboxUidBase,
    limits: {
      ...limits,
      maxProcesses: config.shellMaxProcesses,
      memoryBytes: config.shellMemoryBytes,
      internMemoryBytes: config.internMemoryBytes,
      cpuMillicores: config.internCpuMillicores,
      tmpBytes: config.shellTmpBytes,
    },
    egress:
      config.runtimeNetwork === 'egress'
        ? new NatsSandboxEgress(nc, subjects.egress, config.egressSocketDir, join(config.dataDir, 'sandbox-trust'))
        : undefined,
  });
}
