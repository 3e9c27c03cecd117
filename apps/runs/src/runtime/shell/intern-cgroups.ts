import { mkdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What one intern's processes may use together (CONTRACT section 22): every command and terminal of it at once. */
export interface CgroupLimits {
  /** INTERN_MEMORY_BYTES: RAM of all its processes and of its tmpfs (`/tmp`, `/dev/shm`). */
  memoryBytes: number;
  /** INTERN_CPU_MILLICORES: 1000 is one core. */
  cpuMillicores: number;
  /** SHELL_MAX_PROCESSES: processes and threads at once. */
  maxProcesses: number;
}

/** One intern's cgroup: the `cgroup.procs` files a sandbox joins, and how many of its processes the kernel killed. */
export interface InternCgroup {
  procsFiles: string[];
  oomKills(): Promise<number>;
}

/** No cgroup tree this process may write: the sandbox is unavailable (it fails closed, naming why). */
export class CgroupsUnavailable extends Error {
  override readonly name = 'CgroupsUnavailable';
}

/** The v1 controllers an intern's cgroup is made in (cgroup v2: the same three, enabled for the subtree). */
const V1_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
const V2_CONTROLLERS = '+memory +pids +cpu';
const CPU_PERIOD_US = 100_000;
/** Where the service's own processes go on cgroup v2, so its cgroup may hand controllers down (no internal processes). */
const V2_SERVICE_LEAF = 'service';
const INTERNS = 'interns';
/** A cgroup name: an intern id (uuid) or the start-up self-test's. */
const CGROUP_NAME = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|self-test)$/;

interface Layout {
  version: 1 | 2;
  /** v1: one parent per controller; v2: one parent. Intern cgroups are made below each. */
  parents: { controller: string; directory: string }[];
}

/**
 * A cgroup per intern, below the runs service's own cgroup (so the pod's limit still holds over everything):
 * `<own>/interns/<intern id>` in each of the v1 `memory`, `pids` and `cpu` hierarchies, or in the one v2
 * hierarchy. Limits are written every time a sandbox is prepared (a changed setting applies to the next command).
 */
export class InternCgroups {
  private constructor(private readonly layout: Layout) {}

  get version(): 1 | 2 {
    return this.layout.version;
  }

  /**
   * Finds the hierarchy (v2 when `<root>/cgroup.controllers` exists, else v1) and makes the `interns` parents.
   * `selfCgroup` is the text of `/proc/self/cgroup`.
   */
  static async open(root = '/sys/fs/cgroup', selfCgroup?: string): Promise<InternCgroups> {
    const membership = selfCgroup ?? (await readFile('/proc/self/cgroup', 'utf8'));
    try {
      const layout = (await exists(join(root, 'cgroup.controllers'))) ? await openV2(root, membership) : await openV1(root, membership);
      return new InternCgroups(layout);
    } catch (error) {
      if (error instanceof CgroupsUnavailable) throw error;
      throw new CgroupsUnavailable(`no writable cgroup tree under ${root}: ${(error as Error).message}`);
    }
  }

  /** Makes (or updates) the intern's cgroup with these limits. */
  async prepare(name: string, limits: CgroupLimits): Promise<InternCgroup> {
    const directories = this.directoriesOf(name);
    for (const { directory } of directories) await mkdir(directory, { recursive: true });
    if (this.layout.version === 2) {
      const [{ directory }] = directories;
      await writeLimit(directory, 'memory.max', limits.memoryBytes);
      // Swap would let the intern hold more than its memory; absent where the kernel has no swap accounting.
      if (await exists(join(directory, 'memory.swap.max'))) await writeLimit(directory, 'memory.swap.max', 0);
      await writeLimit(directory, 'pids.max', limits.maxProcesses);
      await writeLimit(directory, 'cpu.max', `${cpuQuotaUs(limits.cpuMillicores)} ${CPU_PERIOD_US}`);
      return { procsFiles: [join(directory, 'cgroup.procs')], oomKills: () => oomKillsFrom(join(directory, 'memory.events')) };
    }
    const byController = new Map(directories.map(({ controller, directory }) => [controller, directory]));
    const memory = byController.get('memory') as string;
    await writeV1Memory(memory, limits.memoryBytes);
    await writeLimit(byController.get('pids') as string, 'pids.max', limits.maxProcesses);
    await writeLimit(byController.get('cpu') as string, 'cpu.cfs_period_us', CPU_PERIOD_US);
    await writeLimit(byController.get('cpu') as string, 'cpu.cfs_quota_us', cpuQuotaUs(limits.cpuMillicores));
    return {
      procsFiles: directories.map(({ directory }) => join(directory, 'cgroup.procs')),
      oomKills: () => oomKillsFrom(join(memory, 'memory.oom_control')),
    };
  }

  /**
   * Removes the intern's cgroup; absent is fine. Its processes are gone once its commands ended, but the kernel
   * may still be reaping the last (EBUSY): tried for two seconds, then left (false), so a process stuck in the
   * kernel cannot hold a teardown; an empty cgroup costs next to nothing.
   */
  async remove(name: string): Promise<boolean> {
    let removed = true;
    for (const { directory } of this.directoriesOf(name)) removed = (await removeCgroup(directory)) && removed;
    return removed;
  }

  private directoriesOf(name: string): { controller: string; directory: string }[] {
    if (!CGROUP_NAME.test(name)) throw new Error(`not a cgroup name: ${JSON.stringify(name)}`);
    return this.layout.parents.map(({ controller, directory }) => ({ controller, directory: join(directory, name) }));
  }
}

/** `/proc/self/cgroup` lines are `<id>:<controllers>:<path>`; v2's is `0::<path>`. */
function ownPath(membership: string, controller: string | null): string {
  for (const line of membership.split('\n')) {
    const [, controllers, path] = line.split(':');
    if (path === undefined) continue;
    if (controller === null ? controllers === '' : controllers.split(',').includes(controller)) return path;
  }
  throw new CgroupsUnavailable(`this process is in no ${controller ?? 'v2'} cgroup (/proc/self/cgroup)`);
}

async function openV1(root: string, membership: string): Promise<Layout> {
  const parents: Layout['parents'] = [];
  for (const controller of V1_CONTROLLERS) {
    const mount = join(root, controller);
    if (!(await exists(mount))) throw new CgroupsUnavailable(`the ${controller} controller is not mounted at ${mount}`);
    const directory = join(mount, ownPath(membership, controller), INTERNS);
    await mkdir(directory, { recursive: true });
    parents.push({ controller, directory });
  }
  return { version: 1, parents };
}

/**
 * cgroup v2 lets a cgroup hand controllers to its children only while it holds no process itself: the service's
 * processes move to a `service` leaf first (as systemd does in a container), then `interns` gets the controllers.
 */
async function openV2(root: string, membership: string): Promise<Layout> {
  const own = join(root, ownPath(membership, null));
  const available = (await readFile(join(own, 'cgroup.controllers'), 'utf8')).trim().split(/\s+/);
  const missing = V1_CONTROLLERS.filter((controller) => !available.includes(controller));
  if (missing.length > 0) throw new CgroupsUnavailable(`the cgroup ${own} is not given the ${missing.join(', ')} controller(s)`);
  await handControllersDown(own);
  const interns = join(own, INTERNS);
  await mkdir(interns, { recursive: true });
  await writeFile(join(interns, 'cgroup.subtree_control'), V2_CONTROLLERS);
  return { version: 2, parents: [{ controller: 'unified', directory: interns }] };
}

/**
 * Enables the controllers for `own`'s children. The kernel refuses (EBUSY) while `own` holds processes, unless it
 * is the real root; `own` may also be the root of a cgroup namespace (`0::/` in a container), which looks like
 * the root and is not. So: try, and on EBUSY move every process of `own` into the `service` leaf and try again.
 */
export async function handControllersDown(own: string, write: (path: string, text: string) => Promise<void> = writeFile): Promise<void> {
  try {
    await write(join(own, 'cgroup.subtree_control'), V2_CONTROLLERS);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
  }
  const leaf = join(own, V2_SERVICE_LEAF);
  await mkdir(leaf, { recursive: true });
  const pids = (await readFile(join(own, 'cgroup.procs'), 'utf8')).split('\n').filter((pid) => pid.trim() !== '');
  for (const pid of pids) {
    await write(join(leaf, 'cgroup.procs'), pid).catch((error: NodeJS.ErrnoException) => {
      // A process that exited meanwhile (ESRCH), or a kernel thread that cannot move (EINVAL): nothing to move.
      if (error.code !== 'ESRCH' && error.code !== 'EINVAL') throw error;
    });
  }
  await write(join(own, 'cgroup.subtree_control'), V2_CONTROLLERS);
}

/**
 * v1 memory: the limit, and the same for memory+swap where swap accounting exists (else swap would extend it).
 * memsw may never be below the limit, so the order of the two writes depends on the direction of the change.
 */
async function writeV1Memory(directory: string, bytes: number): Promise<void> {
  const swapFile = join(directory, 'memory.memsw.limit_in_bytes');
  if (!(await exists(swapFile))) {
    await writeLimit(directory, 'memory.limit_in_bytes', bytes);
    return;
  }
  try {
    await writeLimit(directory, 'memory.limit_in_bytes', bytes);
    await writeLimit(directory, 'memory.memsw.limit_in_bytes', bytes);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EINVAL') throw error;
    await writeLimit(directory, 'memory.memsw.limit_in_bytes', bytes);
    await writeLimit(directory, 'memory.limit_in_bytes', bytes);
  }
}

const REMOVE_ATTEMPTS = 20;
const REMOVE_RETRY_MS = 100;

async function removeCgroup(directory: string): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await rmdir(directory);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return true;
      if (code !== 'EBUSY') throw error;
      if (attempt >= REMOVE_ATTEMPTS) return false;
      await new Promise((resolve) => setTimeout(resolve, REMOVE_RETRY_MS));
    }
  }
}

async function writeLimit(directory: string, file: string, value: number | string): Promise<void> {
  await writeFile(join(directory, file), String(value));
}

function cpuQuotaUs(millicores: number): number {
  return Math.max(1000, Math.round((millicores * CPU_PERIOD_US) / 1000));
}

/** The `oom_kill <n>` line of `memory.events` (v2) or `memory.oom_control` (v1); 0 when absent. */
async function oomKillsFrom(file: string): Promise<number> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const match = /^oom_kill (\d+)$/m.exec(text);
  return match ? Number(match[1]) : 0;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
