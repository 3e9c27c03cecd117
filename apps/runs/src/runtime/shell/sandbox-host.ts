import { constants } from 'node:fs';
import { access, chmod, lstat, mkdir, open, readlink, realpath, stat } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import type { SystemPath } from './bwrap-arguments';
import { markDescriptorsCloseOnExec } from './descriptor-hygiene';
import { InternCgroups } from './intern-cgroups';
import { compileSyscallFilter } from './syscall-filter';

/** The host's top-level system paths besides /usr, mirrored into the sandbox when present. */
const SYSTEM_PATHS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** What programs need of the host's /etc (the loader's cache, `awk` and friends' alternatives, the time zone). */
const ETC_PATHS = ['/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/alternatives', '/etc/localtime'];
/** Where the tools are looked for besides the service's PATH. */
const TOOL_DIRECTORIES = ['/usr/bin', '/usr/sbin', '/bin', '/sbin'];

/** What the sandbox needs of this host, found once at start. */
export interface SandboxHost {
  bwrapPath: string;
  /** prlimit on the host; the same path works inside the sandbox (it lives under /usr). */
  prlimitPath: string;
  systemPaths: SystemPath[];
  etcPaths: string[];
  /** The compiled syscall filter (bwrap `--seccomp`). */
  syscallFilter: Buffer;
  /** util-linux's setpriv: the sandbox becomes the intern's uid after it joined the intern's cgroups as root. */
  setprivPath: string;
  cgroups: InternCgroups;
  /**
   * How host paths the interns cannot reach by path are reached anyway (`unshare` and root-owned staging mount
   * points: StagingBinds); null where the host has no `unshare` or no such mount points can be made.
   */
  reach: StagingPoints | null;
  /** socat (under /usr), which bridges the egress proxy into each sandbox; null where RUNTIME_NETWORK=none. */
  socatPath: string | null;
}

/** The staging mount points: root's, searchable by all, empty on the host (binds happen in private namespaces). */
export interface StagingPoints {
  unsharePath: string;
  stagingDir: string;
  egressSocket: string;
  caBundle: string;
}

const STAGING_ROOT = '/run/interns-sandbox';
export const WORKSPACE_STAGING_DIR = `${STAGING_ROOT}/workspace`;
const EGRESS_SOCKET_STAGING = `${STAGING_ROOT}/egress.sock`;
const CA_BUNDLE_STAGING = `${STAGING_ROOT}/ca-certificates.crt`;

/** The host cannot run the sandbox; `reason` is what the shell tool answers after `sandbox unavailable: `. */
export class SandboxUnavailable extends Error {}

/** The service's PATH, then the usual system directories (a service may run with a bare PATH). */
export function toolDirectories(searchPath = process.env.PATH ?? ''): string[] {
  return [...searchPath.split(delimiter).filter((entry) => entry.startsWith('/')), ...TOOL_DIRECTORIES];
}

/**
 * Finds bwrap, prlimit, the system directories, and socat when the sandbox's way out is the egress proxy; throws
 * SandboxUnavailable naming what is missing.
 */
export async function probeSandboxHost(directories = toolDirectories(), cgroupRoot?: string, egress = false): Promise<SandboxHost> {
  // Each intern's own uid, its workspace handed over to it: only root may do that (capabilities may be cut
  // down to CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_FOWNER, CAP_DAC_OVERRIDE and CAP_KILL).
  if (process.getuid?.() !== 0) {
    throw new SandboxUnavailable('the runs service must run as root to give each intern its own uid (RUNTIME_SANDBOX=off for development as another user)');
  }
  const bwrapPath = await findTool('bwrap', directories);
  if (bwrapPath === null) throw new SandboxUnavailable('install bubblewrap (no bwrap on this host)');
  const prlimitPath = await findTool('prlimit', directories);
  if (prlimitPath === null) throw new SandboxUnavailable('install util-linux (no prlimit on this host)');
  const prlimitReal = await realpath(prlimitPath);
  if (!prlimitReal.startsWith('/usr/')) throw new SandboxUnavailable(`prlimit at ${prlimitReal} is outside /usr, which the sandbox mirrors`);
  if (!(await isExecutable('/bin/sh'))) throw new SandboxUnavailable('no /bin/sh on this host');
  const setprivPath = await findTool('setpriv', directories);
  if (setprivPath === null) throw new SandboxUnavailable('install util-linux (no setpriv on this host)');

  let socatPath: string | null = null;
  if (egress) {
    const found = await findTool('socat', directories);
    if (found === null) throw new SandboxUnavailable('install socat (RUNTIME_NETWORK=egress bridges the egress proxy into each sandbox with it), or set RUNTIME_NETWORK=none');
    socatPath = await realpath(found);
    if (!socatPath.startsWith('/usr/')) throw new SandboxUnavailable(`socat at ${socatPath} is outside /usr, which the sandbox mirrors`);
  }

  const systemPaths: SystemPath[] = [];
  for (const path of SYSTEM_PATHS) {
    const entry = await lstat(path).catch(() => null);
    if (entry?.isSymbolicLink()) systemPaths.push({ path, kind: 'symlink', target: await readlink(path) });
    else if (entry?.isDirectory()) systemPaths.push({ path, kind: 'directory' });
  }
  const etcPaths: string[] = [];
  for (const path of ETC_PATHS) if (await exists(path)) etcPaths.push(path);
  let syscallFilter: Buffer;
  let cgroups: InternCgroups;
  try {
    syscallFilter = await compileSyscallFilter();
    markDescriptorsCloseOnExec();
    cgroups = await InternCgroups.open(cgroupRoot);
  } catch (error) {
    throw new SandboxUnavailable((error as Error).message);
  }
  const reach = await stagingPoints(directories);
  if (egress && reach === null) throw new SandboxUnavailable(`RUNTIME_NETWORK=egress needs util-linux's unshare and a root-owned ${STAGING_ROOT}`);
  return { bwrapPath, prlimitPath: prlimitReal, systemPaths, etcPaths, syscallFilter, setprivPath, cgroups, reach, socatPath };
}

async function stagingPoints(directories: string[]): Promise<StagingPoints | null> {
  const unsharePath = await findTool('unshare', directories);
  if (unsharePath === null) return null;
  try {
    await mkdir(WORKSPACE_STAGING_DIR, { recursive: true, mode: 0o711 });
    await chmod(STAGING_ROOT, 0o711);
    await chmod(WORKSPACE_STAGING_DIR, 0o711);
    // Files, as mount points for files: opened without truncating one a concurrent command has something bound onto.
    for (const file of [EGRESS_SOCKET_STAGING, CA_BUNDLE_STAGING]) await (await open(file, 'a', 0o644)).close();
    if ((await firstUnsearchableAncestor(join(WORKSPACE_STAGING_DIR, 'x'))) !== null) return null;
  } catch {
    return null;
  }
  return { unsharePath, stagingDir: WORKSPACE_STAGING_DIR, egressSocket: EGRESS_SOCKET_STAGING, caBundle: CA_BUNDLE_STAGING };
}

/**
 * bwrap runs as the intern's uid and resolves the workspace by path, so every directory above the workspaces
 * must be searchable by others. Returns the first that is not, or null.
 */
export async function firstUnsearchableAncestor(directory: string): Promise<string | null> {
  for (let current = dirname(directory); ; current = dirname(current)) {
    const mode = (await stat(current)).mode;
    if ((mode & constants.S_IXOTH) === 0) return current;
    if (current === dirname(current)) return null;
  }
}

async function findTool(name: string, directories: string[]): Promise<string | null> {
  for (const directory of directories) {
    const candidate = join(directory, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return null;
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
