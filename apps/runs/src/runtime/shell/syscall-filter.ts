import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';

/**
 * The sandbox's syscall filter (CONTRACT section 22), compiled once per process with libseccomp (the library
 * container runtimes and flatpak use; reached through koffi, no compiler at build or run time) and handed to
 * bwrap with `--seccomp <fd>`. Everything is allowed but what a tenant could use against the kernel, the host
 * or another tenant; those calls fail with EPERM (ENOSYS for clone3, so libc falls back to clone, which the
 * filter can inspect). Syscalls of another ABI (32-bit x86 on x86_64) hit libseccomp's bad-architecture action,
 * which kills the calling thread.
 */

/** A comparison of one syscall argument, as libseccomp's `struct scmp_arg_cmp`. */
interface ArgumentMatch {
  arg: number;
  /** SCMP_CMP_MASKED_EQ: `(argument & mask) == value`. */
  mask: bigint;
  value: bigint;
}

export interface DeniedCall {
  syscall: string;
  errno: number;
  /** Denied only when this matches; absent: always. */
  when?: ArgumentMatch;
}

const EPERM = 1;
const ENOSYS = 38;
const SCMP_ACT_ALLOW = 0x7fff0000;
const SCMP_CMP_MASKED_EQ = 7;
const errnoAction = (errno: number) => (0x00050000 | (errno & 0xffff)) >>> 0;

/** Namespace flags of clone(2): a new namespace of any kind is refused (bwrap already refuses user namespaces). */
const CLONE_NAMESPACE_FLAGS = {
  CLONE_NEWNS: 0x00020000n,
  CLONE_NEWCGROUP: 0x02000000n,
  CLONE_NEWUTS: 0x04000000n,
  CLONE_NEWIPC: 0x08000000n,
  CLONE_NEWUSER: 0x10000000n,
  CLONE_NEWPID: 0x20000000n,
  CLONE_NEWNET: 0x40000000n,
};

/** Terminal ioctls that push input into, or drive, another program's terminal. */
const TIOCSTI = 0x5412n;
const TIOCLINUX = 0x541cn;
const IOCTL_REQUEST = 0xffffffffn;
/** vsock reaches the host (or a VM's host) outside every network namespace. */
const AF_VSOCK = 40n;
const SOCKET_DOMAIN = 0xffffffffn;

const always = (errno: number, ...syscalls: string[]): DeniedCall[] => syscalls.map((syscall) => ({ syscall, errno }));

export const DENIED_CALLS: readonly DeniedCall[] = [
  // Kernel keyrings are shared by uid and session beyond the sandbox's namespaces: no keyring at all.
  ...always(EPERM, 'keyctl', 'add_key', 'request_key'),
  // Reading or steering other processes, loading kernel programs, observing the kernel.
  ...always(EPERM, 'ptrace', 'process_vm_readv', 'process_vm_writev', 'bpf', 'perf_event_open', 'userfaultfd'),
  // io_uring bypasses the filter for the operations it submits.
  ...always(EPERM, 'io_uring_setup', 'io_uring_enter', 'io_uring_register'),
  // Execution domains (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC) weaken what the kernel guarantees a process.
  ...always(EPERM, 'personality'),
  // Mounts and namespaces: the sandbox's view of the system is bwrap's to build, not the tenant's.
  ...always(EPERM, 'mount', 'umount2', 'pivot_root', 'chroot', 'unshare', 'setns'),
  ...always(EPERM, 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'move_mount', 'open_tree', 'mount_setattr'),
  ...always(EPERM, 'open_by_handle_at', 'name_to_handle_at', 'kexec_load', 'kexec_file_load', 'init_module', 'finit_module'),
  ...always(EPERM, 'delete_module', 'acct', 'quotactl', 'swapon', 'swapoff', 'reboot', 'syslog', 'vhangup'),
  ...Object.values(CLONE_NAMESPACE_FLAGS).map((flag) => ({ syscall: 'clone', errno: EPERM, when: { arg: 0, mask: flag, value: flag } })),
  // clone3 passes its flags in memory, out of the filter's sight: ENOSYS makes libc use clone.
  ...always(ENOSYS, 'clone3'),
  { syscall: 'ioctl', errno: EPERM, when: { arg: 1, mask: IOCTL_REQUEST, value: TIOCSTI } },
  { syscall: 'ioctl', errno: EPERM, when: { arg: 1, mask: IOCTL_REQUEST, value: TIOCLINUX } },
  { syscall: 'socket', errno: EPERM, when: { arg: 0, mask: SOCKET_DOMAIN, value: AF_VSOCK } },
];

interface Libseccomp {
  init(defaultAction: number): unknown;
  resolve(name: string): number;
  addRule(context: unknown, action: number, syscall: number, count: number, matches: object[] | null): number;
  exportBpf(context: unknown, fd: number): number;
  release(context: unknown): void;
}

let loaded: Libseccomp | null = null;

function loadLibseccomp(): Libseccomp {
  loaded ??= bindLibseccomp();
  return loaded;
}

function bindLibseccomp(): Libseccomp {
  const library = koffi.load('libseccomp.so.2');
  // Anonymous: koffi's type names are global to the process, and a test runner loads this module more than once.
  const argumentComparison = koffi.struct({ arg: 'uint', op: 'int', datum_a: 'uint64', datum_b: 'uint64' });
  return {
    init: library.func('void *seccomp_init(uint32_t def_action)'),
    resolve: library.func('int seccomp_syscall_resolve_name(const char *name)'),
    addRule: library.func('seccomp_rule_add_array', 'int', ['void *', 'uint32_t', 'int', 'unsigned int', koffi.pointer(argumentComparison)]),
    exportBpf: library.func('int seccomp_export_bpf(void *ctx, int fd)'),
    release: library.func('void seccomp_release(void *ctx)'),
  };
}

/** Why the filter could not be built; the sandbox is then unavailable (it fails closed). */
export class SyscallFilterUnavailable extends Error {
  override readonly name = 'SyscallFilterUnavailable';
}

/** The compiled BPF program (raw `struct sock_filter` array), as bwrap's `--seccomp` reads it. */
export async function compileSyscallFilter(denied: readonly DeniedCall[] = DENIED_CALLS): Promise<Buffer> {
  let seccomp: Libseccomp;
  try {
    seccomp = loadLibseccomp();
  } catch (error) {
    throw new SyscallFilterUnavailable(`libseccomp (libseccomp.so.2) cannot be loaded: ${(error as Error).message}; install libseccomp2`);
  }
  const context = seccomp.init(SCMP_ACT_ALLOW);
  if (context === null) throw new SyscallFilterUnavailable('seccomp_init failed');
  const directory = await mkdtemp(join(tmpdir(), 'syscall-filter-'));
  try {
    for (const call of denied) {
      const number = seccomp.resolve(call.syscall);
      // A syscall this architecture does not have cannot be called: nothing to deny.
      if (number < 0) continue;
      const matches = call.when ? [{ arg: call.when.arg, op: SCMP_CMP_MASKED_EQ, datum_a: call.when.mask, datum_b: call.when.value }] : null;
      const added = seccomp.addRule(context, errnoAction(call.errno), number, matches?.length ?? 0, matches);
      if (added !== 0) throw new SyscallFilterUnavailable(`libseccomp refused the rule for ${call.syscall} (${added})`);
    }
    const path = join(directory, 'filter.bpf');
    const file = await open(path, 'w', 0o600);
    try {
      const exported = seccomp.exportBpf(context, file.fd);
      if (exported !== 0) throw new SyscallFilterUnavailable(`seccomp_export_bpf failed (${exported})`);
    } finally {
      await file.close();
    }
    return await readFile(path);
  } finally {
    seccomp.release(context);
    await rm(directory, { recursive: true, force: true });
  }
}
