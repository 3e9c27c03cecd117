/** Where the intern's workspace appears inside the sandbox: its working directory and HOME. */
export const SANDBOX_HOME = '/workspace';
export const SANDBOX_USER = 'intern';
export const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin';

/** A top-level system path of the host as the sandbox mirrors it: a read-only directory, or a symlink (merged /usr). */
export type SystemPath = { path: string; kind: 'directory' } | { path: string; kind: 'symlink'; target: string };

/** File descriptors (of the bwrap process) that carry generated files in, and bwrap's status out. */
export interface SandboxFds {
  passwd: number;
  group: number;
  hosts: number;
  /** bwrap writes JSON documents here: `{"child-pid"}` once started, `{"exit-code"}` when the command ended. */
  status: number;
  /** The compiled syscall filter, read by bwrap and applied to the command. */
  seccomp: number;
}

/** Where, inside the sandbox, the egress proxy's socket is bound and its bridge listens (interface section 19). */
export const SANDBOX_EGRESS_SOCKET = '/run/egress/proxy.sock';
export const SANDBOX_PROXY_URL = 'http://127.0.0.1:3128';
/** The bridge's port as /proc/net/tcp writes a listening socket on 127.0.0.1:3128 (hex, network order). */
const BRIDGE_LISTENING = '0100007F:0C38 00000000:0000 0A';
/** The sandbox's CA bundle: the host's roots and the egress CA, where TLS libraries look by default. */
export const SANDBOX_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** The variables curl, git, pip, npm, Python and Node read for a proxy and for trusted CAs. */
const PROXY_ENV = ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY'];
const NO_PROXY_ENV = ['no_proxy', 'NO_PROXY'];
const CA_ENV = ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO', 'PIP_CERT', 'AWS_CA_BUNDLE', 'CARGO_HTTP_CAINFO'];

/** A sandbox whose only way out is the egress proxy (RUNTIME_NETWORK=egress). */
export interface SandboxEgress {
  /** The listener's socket as bwrap reaches it (a staging path the launch bound it to). */
  socketPath: string;
  /** The CA bundle (host roots and the egress CA) as bwrap reaches it. */
  caBundlePath: string;
  /** socat as the sandbox sees it (under /usr): bridges 127.0.0.1:3128 inside to the socket. */
  socatPath: string;
  /** The secrets' placeholders, by variable name. */
  secretEnv: Record<string, string>;
}

export interface SandboxSpec {
  /** The intern's workspace on the host (bind-mounted read-write at SANDBOX_HOME). */
  workspace: string;
  hostname: string;
  /** The host's `/usr` siblings to mirror (`/bin`, `/lib`, `/lib64`, ...). */
  systemPaths: SystemPath[];
  /** Host files and directories under `/etc` the programs need (loader cache, alternatives, ...), mounted read-only. */
  etcPaths: string[];
  /** Size of the private `/tmp` and of `/dev/shm` (both RAM-backed). */
  tmpBytes: number;
  /**
   * RLIMIT_FSIZE of the command: the largest file it may write (on a directory disk, what is left of the
   * workspace quota; null on an image disk, which bounds itself). Set inside the sandbox, after bwrap wrote its
   * own files (`--ro-bind-data`), which the limit must not hit.
   */
  fileSizeBytes: number | null;
  /** `prlimit` as the sandbox sees it (a path under the mirrored system directories). */
  prlimitPath: string;
  fds: SandboxFds;
  /** Shell text, run by `/bin/sh -c`. */
  command: string;
  /**
   * The command's positional parameters (`$1`, `$2`, ... inside it): data such as file paths travels here, as
   * separate arguments, never spliced into the shell text.
   */
  commandArgs?: string[];
  /** Absent: no network at all (RUNTIME_NETWORK=none). */
  egress?: SandboxEgress;
  /**
   * The command's terminal, when it has one (a terminal attached to the intern): its pseudo-terminal stays the
   * shell's controlling terminal (job control, Ctrl-C, window size changes), so bwrap starts no new session. What a
   * new session guards against, pushing input into the terminal (TIOCSTI, TIOCLINUX), the syscall filter refuses,
   * and the terminal is the attached client's own. Absent: a new session, no terminal.
   */
  terminal?: { term: string };
}

/**
 * Ignores SIGXFSZ, limits the file size, then runs the command: a write past the limit (the workspace quota)
 * fails with EFBIG ("File too large") in the program that wrote, instead of killing it without a word. An
 * ignored signal stays ignored across exec. `$1` is the command, `$2` prlimit, `$3` the size limit, the rest the
 * command's own positional parameters.
 */
const QUOTA_AWARE_SHELL = 'trap "" XFSZ; c="$1"; p="$2"; l="$3"; shift 3; exec "$p" --fsize="$l" -- /bin/sh -c "$c" sh "$@"';

/**
 * Starts the egress bridge (socat: 127.0.0.1:3128 inside, forked per connection, to the proxy's socket), waits until it
 * listens (read from /proc/net/tcp, so no connection reaches the proxy for it), then execs the rest. The bridge dies
 * with the sandbox's PID namespace. `$1` socat, `$2` the socket. Exit 125: the bridge did not start, nothing ran.
 */
const EGRESS_BRIDGE_SHELL = [
  '"$1" TCP4-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr "UNIX-CONNECT:$2" </dev/null >/dev/null 2>&1 &',
  `n=0; until grep -q "${BRIDGE_LISTENING}" /proc/net/tcp; do n=$((n+1)); if [ $n -gt 500 ]; then echo "egress unavailable: the proxy bridge did not start" >&2; exit 125; fi; sleep 0.005; done`,
  'shift 2; exec "$@"',
].join('\n');

/**
 * The bubblewrap command line of one shell command: every namespace of its own (user, PID, mount, IPC, UTS,
 * network, cgroup where possible), no capabilities, no nested user namespaces, a new session, killed with its
 * parent; a read-only root of the host's system directories and a minimal `/etc`, a fresh `/proc` and `/dev`,
 * a private `/tmp`, and the workspace as the only writable host directory, and the syscall filter. Resource
 * limits are not bwrap's
 * job: the caller wraps this in `prlimit` and runs it as the intern's own uid.
 */
export function bwrapArguments(spec: SandboxSpec): string[] {
  const args = [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-net',
    '--unshare-cgroup-try',
    '--disable-userns',
    '--die-with-parent',
    ...(spec.terminal === undefined ? ['--new-session'] : []),
    '--cap-drop',
    'ALL',
    '--hostname',
    spec.hostname,
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const system of spec.systemPaths) {
    if (system.kind === 'symlink') args.push('--symlink', system.target, system.path);
    else args.push('--ro-bind', system.path, system.path);
  }
  for (const path of spec.etcPaths) args.push('--ro-bind', path, path);
  args.push(
    ...['--perms', '0644', '--ro-bind-data', String(spec.fds.passwd), '/etc/passwd'],
    ...['--perms', '0644', '--ro-bind-data', String(spec.fds.group), '/etc/group'],
    ...['--perms', '0644', '--ro-bind-data', String(spec.fds.hosts), '/etc/hosts'],
    ...['--proc', '/proc'],
    ...['--dev', '/dev'],
    ...['--size', String(spec.tmpBytes), '--perms', '1777', '--tmpfs', '/dev/shm'],
    // Read-only after /dev/shm is in place: /dev itself is a tmpfs the sandbox could otherwise fill.
    ...['--remount-ro', '/dev'],
    ...['--size', String(spec.tmpBytes), '--perms', '1777', '--tmpfs', '/tmp'],
    ...['--bind', spec.workspace, SANDBOX_HOME],
    ...(spec.egress === undefined
      ? []
      : [...['--bind', spec.egress.socketPath, SANDBOX_EGRESS_SOCKET], ...['--ro-bind', spec.egress.caBundlePath, SANDBOX_CA_BUNDLE]]),
    ...['--chdir', SANDBOX_HOME],
    // The root tmpfs holds only mount points; nothing may be written there.
    ...['--remount-ro', '/'],
    '--clearenv',
    ...['--setenv', 'HOME', SANDBOX_HOME],
    ...['--setenv', 'USER', SANDBOX_USER],
    ...['--setenv', 'LOGNAME', SANDBOX_USER],
    ...['--setenv', 'PATH', SANDBOX_PATH],
    ...['--setenv', 'LANG', 'C.UTF-8'],
    ...['--setenv', 'TMPDIR', '/tmp'],
    ...(spec.terminal === undefined ? [] : ['--setenv', 'TERM', spec.terminal.term]),
    ...egressEnvironment(spec.egress),
    ...['--json-status-fd', String(spec.fds.status)],
    ...['--seccomp', String(spec.fds.seccomp)],
    '--',
    ...(spec.egress === undefined ? [] : ['/bin/sh', '-c', EGRESS_BRIDGE_SHELL, 'egress-bridge', spec.egress.socatPath, SANDBOX_EGRESS_SOCKET]),
    ...['/bin/sh', '-c', QUOTA_AWARE_SHELL, 'sh', spec.command, spec.prlimitPath, spec.fileSizeBytes === null ? 'unlimited' : String(spec.fileSizeBytes)],
    ...(spec.commandArgs ?? []),
  );
  return args;
}

/** `--setenv` of the proxy, the CA bundle and the secrets' placeholders; nothing without egress. */
function egressEnvironment(egress: SandboxEgress | undefined): string[] {
  if (egress === undefined) return [];
  const env: [string, string][] = [
    // First: the platform's own variables win over a secret's (the egress service leaves such secrets out anyway).
    ...Object.entries(egress.secretEnv),
    ...PROXY_ENV.map((name): [string, string] => [name, SANDBOX_PROXY_URL]),
    ...NO_PROXY_ENV.map((name): [string, string] => [name, 'localhost,127.0.0.1,::1']),
    ...CA_ENV.map((name): [string, string] => [name, SANDBOX_CA_BUNDLE]),
  ];
  return env.flatMap(([name, value]) => ['--setenv', name, value]);
}

/** The generated `/etc` files: the intern's own user and group, and no host names. */
export function sandboxEtcFiles(uid: number, gid: number, hostname: string): { passwd: string; group: string; hosts: string } {
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\n${SANDBOX_USER}:x:${uid}:${gid}:intern:${SANDBOX_HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${SANDBOX_USER}:x:${gid}:\nnogroup:x:65534:\n`,
    hosts: `127.0.0.1\tlocalhost ${hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n`,
  };
}

export interface LimitSpec {
  /** RLIMIT_NPROC: processes of the intern's uid at once (per uid, so per intern, across its commands). */
  maxProcesses: number;
  /** RLIMIT_AS: address space of each process. */
  memoryBytes: number;
}

/**
 * Run as root by the service, before anything of the sandbox starts: joins the intern's cgroups (so every
 * process the sandbox forks is counted there), makes the kernel's OOM killer pick the sandbox before any process
 * of the service (oom_score_adj 1000, inherited), then execs the rest (setpriv to the intern's uid, prlimit, bwrap).
 * Arguments: the `cgroup.procs` files, `--`, the command. Exit 125: a cgroup could not be joined, nothing ran.
 */
const CGROUP_JOIN_SHELL = 'echo 1000 > /proc/self/oom_score_adj || exit 125; while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/**
 * Still root, in a mount namespace of the command's own: binds `$1` onto a staging path (`$2`) every uid can
 * reach, then execs the rest (the next bind, or the command). Exit 125: the bind failed, nothing ran.
 */
const STAGING_BIND_SHELL = 'mount --bind -- "$1" "$2" || exit 125; shift 2; exec "$@"';

/** A host path bound onto a staging path, for bwrap to reach. */
export interface StagingBind {
  source: string;
  target: string;
}

/**
 * Host paths bwrap, run as the intern's uid, could not reach by path: a workspace below a directory that uid cannot
 * search (a clone in `/root`), the egress socket and CA bundle below the service's own directories. The launch binds
 * each onto a root-owned staging path in a private mount namespace (invisible to every other process), and bwrap
 * binds the staging paths instead.
 */
export interface StagingBinds {
  unsharePath: string;
  binds: StagingBind[];
}

export interface LaunchSpec {
  procsFiles: string[];
  setprivPath: string;
  /** The intern's host uid (and gid). */
  uid: number;
  staging?: StagingBinds;
}

/** The whole command line of a sandbox: the cgroup join as root, then the intern's uid, then `command`. */
export function launchArguments(spec: LaunchSpec, command: string[]): { file: string; args: string[] } {
  return {
    file: '/bin/sh',
    args: [
      '-c',
      CGROUP_JOIN_SHELL,
      'sandbox-launch',
      ...spec.procsFiles,
      '--',
      ...(spec.staging === undefined || spec.staging.binds.length === 0
        ? []
        : [
            ...[spec.staging.unsharePath, '--mount', '--propagation', 'private', '--'],
            ...spec.staging.binds.flatMap((bind) => ['/bin/sh', '-c', STAGING_BIND_SHELL, 'staging-bind', bind.source, bind.target]),
          ]),
      spec.setprivPath,
      `--reuid=${spec.uid}`,
      `--regid=${spec.uid}`,
      '--clear-groups',
      // Nothing of root's privileges crosses: no capability to inherit or regain, no gaining any by exec.
      '--no-new-privs',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--',
      ...command,
    ],
  };
}

/** `prlimit` sets the limits on itself and execs bwrap, so every process of the sandbox inherits them. */
export function prlimitArguments(limits: LimitSpec, bwrapPath: string): string[] {
  return [
    `--nproc=${limits.maxProcesses}`,
    `--as=${limits.memoryBytes}`,
    // No core files: they would land in the workspace and count against its quota.
    '--core=0',
    '--',
    bwrapPath,
  ];
}
