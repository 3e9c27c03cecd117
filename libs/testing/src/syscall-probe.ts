import koffi from 'koffi';

/**
 * A python3 script that makes each syscall the sandbox's filter refuses (CONTRACT section 22) with harmless
 * arguments and prints `<name> <errno name>` (or `<name> allowed`), for the sandbox tests to run inside a sandbox.
 * Syscall numbers come from libseccomp's table for this architecture, the one the filter is compiled with.
 */
/**
 * A new user namespace: without the filter the kernel answers ENOSPC (bwrap's --disable-userns), with it EPERM, so
 * these probes tell the filter's answer from the kernel's (a mount namespace would be EPERM either way, for want of
 * CAP_SYS_ADMIN).
 */
const CLONE_NEWUSER = 0x10000000;
const SIGCHLD = 17;
const TIOCSTI = 0x5412;
const AF_VSOCK = 40;
const SOCK_STREAM = 1;

export const DENIED_SYSCALL_PROBES: readonly { name: string; args: number[]; errno: 'EPERM' | 'ENOSYS' }[] = [
  { name: 'keyctl', args: [0, 0, 0, 0], errno: 'EPERM' },
  { name: 'add_key', args: [0, 0, 0, 0], errno: 'EPERM' },
  { name: 'request_key', args: [0, 0, 0, 0], errno: 'EPERM' },
  { name: 'ptrace', args: [0, 0, 0, 0], errno: 'EPERM' },
  { name: 'bpf', args: [0, 0, 0], errno: 'EPERM' },
  { name: 'perf_event_open', args: [0, 0, -1, -1, 0], errno: 'EPERM' },
  { name: 'userfaultfd', args: [0], errno: 'EPERM' },
  { name: 'io_uring_setup', args: [1, 0], errno: 'EPERM' },
  { name: 'personality', args: [0x0040000], errno: 'EPERM' },
  { name: 'mount', args: [0, 0, 0, 0, 0], errno: 'EPERM' },
  { name: 'unshare', args: [CLONE_NEWUSER], errno: 'EPERM' },
  { name: 'setns', args: [0, 0], errno: 'EPERM' },
  { name: 'clone', args: [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0], errno: 'EPERM' },
  { name: 'clone3', args: [0, 0], errno: 'ENOSYS' },
  { name: 'ioctl', args: [0, TIOCSTI, 0], errno: 'EPERM' },
  { name: 'socket', args: [AF_VSOCK, SOCK_STREAM, 0], errno: 'EPERM' },
];

let resolveSyscall: ((name: string) => number) | null = null;

function syscallNumber(name: string): number {
  resolveSyscall ??= koffi.load('libseccomp.so.2').func('int seccomp_syscall_resolve_name(const char *name)') as (name: string) => number;
  const number = resolveSyscall(name);
  if (number < 0) throw new Error(`no syscall ${name} on this architecture`);
  return number;
}

/**
 * The shell command to run in a sandbox (one line: the scripted model's `/shell` takes one), and the lines it
 * prints when every probe is refused as it should be.
 */
export function syscallProbe(): { command: string; expected: string[] } {
  const calls = DENIED_SYSCALL_PROBES.map(({ name, args }) => `print(${JSON.stringify(name)}, call(${syscallNumber(name)}, ${args.join(', ')}))`);
  const script = [
    'import ctypes, errno',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'libc.syscall.restype = ctypes.c_long',
    // errno is read after the call returned: the outer lambda's argument is evaluated first.
    'call = lambda number, *args: (lambda result: errno.errorcode.get(ctypes.get_errno(), "?") if result == -1 else "allowed")(libc.syscall(number, *[ctypes.c_long(a) for a in args]))',
    ...calls,
  ].join('; ');
  return {
    command: `grep -E '^Seccomp:' /proc/self/status; python3 -c '${script}'`,
    expected: ['Seccomp:\t2', ...DENIED_SYSCALL_PROBES.map(({ name, errno }) => `${name} ${errno}`)],
  };
}
