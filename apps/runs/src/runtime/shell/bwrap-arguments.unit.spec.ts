import {
  bwrapArguments,
  launchArguments,
  prlimitArguments,
  SANDBOX_CA_BUNDLE,
  SANDBOX_EGRESS_SOCKET,
  SANDBOX_HOME,
  SANDBOX_PROXY_URL,
  sandboxEtcFiles,
  type SandboxSpec,
} from './bwrap-arguments';

const SPEC: SandboxSpec = {
  workspace: '/data/workspaces/0b3c',
  hostname: 'intern',
  systemPaths: [
    { path: '/bin', kind: 'symlink', target: 'usr/bin' },
    { path: '/lib64', kind: 'directory' },
  ],
  etcPaths: ['/etc/ld.so.cache', '/etc/alternatives'],
  tmpBytes: 1024,
  fileSizeBytes: 2048,
  prlimitPath: '/usr/bin/prlimit',
  fds: { passwd: 3, group: 4, hosts: 5, status: 6, seccomp: 7 },
  command: 'echo "$HOME" && ls',
};

/** The values that follow each occurrence of `option` (one value per occurrence, or `arity` values). */
function valuesOf(args: string[], option: string, arity = 1): string[][] {
  const found: string[][] = [];
  args.forEach((arg, index) => {
    if (arg === option && index < args.indexOf('--')) found.push(args.slice(index + 1, index + 1 + arity));
  });
  return found;
}

describe('bwrapArguments', () => {
  const args = bwrapArguments(SPEC);

  it('unshares every namespace, drops every capability, forbids nested user namespaces and dies with its parent', () => {
    for (const flag of ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--disable-userns', '--die-with-parent', '--new-session']) {
      expect(args).toContain(flag);
    }
    expect(valuesOf(args, '--cap-drop')).toEqual([['ALL']]);
    expect(args).not.toContain('--share-net');
  });

  it('mounts the system read-only, mirrors /usr siblings as the host has them, and binds only the workspace writable', () => {
    expect(valuesOf(args, '--ro-bind', 2)).toEqual([
      ['/usr', '/usr'],
      ['/lib64', '/lib64'],
      ['/etc/ld.so.cache', '/etc/ld.so.cache'],
      ['/etc/alternatives', '/etc/alternatives'],
    ]);
    expect(valuesOf(args, '--symlink', 2)).toEqual([['usr/bin', '/bin']]);
    expect(valuesOf(args, '--bind', 2)).toEqual([[SPEC.workspace, SANDBOX_HOME]]);
    expect(args).not.toContain('--dev-bind');
    expect(valuesOf(args, '--chdir')).toEqual([[SANDBOX_HOME]]);
  });

  it('applies the syscall filter read from its descriptor', () => {
    expect(valuesOf(args, '--seccomp')).toEqual([['7']]);
  });

  it('gives a fresh /proc and /dev, sized private /tmp and /dev/shm, and a read-only root and /dev', () => {
    expect(valuesOf(args, '--proc')).toEqual([['/proc']]);
    expect(valuesOf(args, '--dev')).toEqual([['/dev']]);
    expect(valuesOf(args, '--size', 4)).toEqual([
      ['1024', '--perms', '1777', '--tmpfs'],
      ['1024', '--perms', '1777', '--tmpfs'],
    ]);
    expect(valuesOf(args, '--tmpfs')).toEqual([['/dev/shm'], ['/tmp']]);
    expect(valuesOf(args, '--remount-ro')).toEqual([['/dev'], ['/']]);
    // The root goes read-only last, after every mount point on it was made.
    expect(args.lastIndexOf('--remount-ro')).toBeGreaterThan(args.lastIndexOf('--bind'));
  });

  it('writes generated passwd, group and hosts from their fds and reports status on its own fd', () => {
    expect(valuesOf(args, '--ro-bind-data', 2)).toEqual([
      ['3', '/etc/passwd'],
      ['4', '/etc/group'],
      ['5', '/etc/hosts'],
    ]);
    expect(valuesOf(args, '--json-status-fd')).toEqual([['6']]);
  });

  it('clears the environment and sets only what a shell needs', () => {
    expect(args).toContain('--clearenv');
    expect(valuesOf(args, '--setenv', 2).map(([name]) => name)).toEqual(['HOME', 'USER', 'LOGNAME', 'PATH', 'LANG', 'TMPDIR']);
    expect(valuesOf(args, '--setenv', 2)[0]).toEqual(['HOME', SANDBOX_HOME]);
  });

  it('runs the command as one argument (never spliced into shell text) under the file size limit, SIGXFSZ ignored', () => {
    const command = args.slice(args.indexOf('--') + 1);
    expect(command.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(command[2]).toContain('trap "" XFSZ');
    expect(command.slice(3)).toEqual(['sh', SPEC.command, '/usr/bin/prlimit', '2048']);
  });

  it('hands the command its positional parameters as separate arguments after the size limit', () => {
    const withArgs = bwrapArguments({ ...SPEC, commandArgs: ['a b', '$(x)', '-n'] });
    const command = withArgs.slice(withArgs.indexOf('--') + 1);
    expect(command[2]).toContain('/bin/sh -c "$c" sh "$@"');
    expect(command.slice(3)).toEqual(['sh', SPEC.command, '/usr/bin/prlimit', '2048', 'a b', '$(x)', '-n']);
  });

  it('sets no file size limit on an image disk, which bounds the workspace itself', () => {
    const unbounded = bwrapArguments({ ...SPEC, fileSizeBytes: null });
    expect(unbounded.slice(unbounded.indexOf('--') + 4)).toEqual(['sh', SPEC.command, '/usr/bin/prlimit', 'unlimited']);
  });
});

describe('bwrapArguments with egress (RUNTIME_NETWORK=egress)', () => {
  const egress = { socketPath: '/run/stage/egress.sock', caBundlePath: '/run/stage/ca.crt', socatPath: '/usr/bin/socat', secretEnv: { GITHUB_TOKEN: 'vault:github_token:abc' } };
  const args = bwrapArguments({ ...SPEC, egress });

  it('keeps the network namespace of its own: the proxy socket is the only way out', () => {
    expect(args).toContain('--unshare-net');
    expect(args).not.toContain('--share-net');
  });

  it("binds the listener's socket and the CA bundle (read-only, where TLS libraries look)", () => {
    expect(valuesOf(args, '--bind', 2)).toEqual([
      [SPEC.workspace, SANDBOX_HOME],
      [egress.socketPath, SANDBOX_EGRESS_SOCKET],
    ]);
    expect(valuesOf(args, '--ro-bind', 2)).toContainEqual([egress.caBundlePath, SANDBOX_CA_BUNDLE]);
  });

  it("sets the proxy and CA variables and each secret's placeholder, the platform's own variables last", () => {
    const env = valuesOf(args, '--setenv', 2);
    expect(env).toContainEqual(['GITHUB_TOKEN', 'vault:github_token:abc']);
    for (const name of ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY']) expect(env).toContainEqual([name, SANDBOX_PROXY_URL]);
    for (const name of ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'GIT_SSL_CAINFO', 'CURL_CA_BUNDLE']) {
      expect(env).toContainEqual([name, SANDBOX_CA_BUNDLE]);
    }
    expect(env).toContainEqual(['no_proxy', 'localhost,127.0.0.1,::1']);
    const names = env.map(([name]) => name);
    expect(names.indexOf('GITHUB_TOKEN')).toBeLessThan(names.indexOf('HTTPS_PROXY'));
  });

  it('starts the bridge (socat to the socket) before the quota-aware shell, which still gets the command as one argument', () => {
    const command = args.slice(args.indexOf('--') + 1);
    expect(command.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(command[2]).toContain('TCP4-LISTEN:3128,bind=127.0.0.1,fork');
    expect(command.slice(3, 6)).toEqual(['egress-bridge', '/usr/bin/socat', SANDBOX_EGRESS_SOCKET]);
    expect(command.slice(6, 8)).toEqual(['/bin/sh', '-c']);
    expect(command[8]).toContain('trap "" XFSZ');
    expect(command.slice(9)).toEqual(['sh', SPEC.command, '/usr/bin/prlimit', '2048']);
  });
});

describe('bwrapArguments for a terminal', () => {
  const args = bwrapArguments({ ...SPEC, terminal: { term: 'xterm-256color' } });

  it('keeps the pseudo-terminal as the controlling terminal (no new session) and sets TERM; every namespace stays', () => {
    expect(args).not.toContain('--new-session');
    expect(bwrapArguments(SPEC)).toContain('--new-session');
    expect(valuesOf(args, '--setenv', 2)).toContainEqual(['TERM', 'xterm-256color']);
    for (const flag of ['--unshare-user', '--unshare-pid', '--unshare-net', '--disable-userns', '--die-with-parent']) expect(args).toContain(flag);
    expect(valuesOf(args, '--seccomp')).toEqual([['7']]);
  });
});

describe('launchArguments', () => {
  const spec = { procsFiles: ['/sys/fs/cgroup/pids/i/cgroup.procs'], setprivPath: '/usr/bin/setpriv', uid: 200001 };

  it('joins the cgroups as root, then becomes the intern without any privilege', () => {
    const { file, args } = launchArguments(spec, ['bwrap']);
    expect(file).toBe('/bin/sh');
    expect(args.slice(3, 5)).toEqual(['/sys/fs/cgroup/pids/i/cgroup.procs', '--']);
    expect(args.slice(5)).toEqual(['/usr/bin/setpriv', '--reuid=200001', '--regid=200001', '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all', '--', 'bwrap']);
  });

  it('binds each staging path in one private mount namespace, one after the other, before dropping root', () => {
    const binds = [
      { source: '/root/clone/.data/workspaces/w', target: '/run/interns-sandbox/workspace' },
      { source: '/root/clone/.data/egress/x.sock', target: '/run/interns-sandbox/egress.sock' },
    ];
    const { args } = launchArguments({ ...spec, staging: { unsharePath: '/usr/bin/unshare', binds } }, ['bwrap']);
    const afterJoin = args.slice(args.indexOf('--') + 1);
    expect(afterJoin.slice(0, 5)).toEqual(['/usr/bin/unshare', '--mount', '--propagation', 'private', '--']);
    expect(afterJoin.slice(5, 7)).toEqual(['/bin/sh', '-c']);
    expect(afterJoin.slice(8, 11)).toEqual(['staging-bind', binds[0].source, binds[0].target]);
    expect(afterJoin.slice(14, 17)).toEqual(['staging-bind', binds[1].source, binds[1].target]);
    expect(afterJoin[17]).toBe('/usr/bin/setpriv');
  });
});

describe('prlimitArguments', () => {
  it('limits processes and memory, forbids core files, then execs bwrap', () => {
    expect(prlimitArguments({ maxProcesses: 64, memoryBytes: 536870912 }, '/usr/bin/bwrap')).toEqual([
      '--nproc=64',
      '--as=536870912',
      '--core=0',
      '--',
      '/usr/bin/bwrap',
    ]);
  });
});

describe('sandboxEtcFiles', () => {
  it('names the intern user with its own uid and the workspace as home, and nothing of the host', () => {
    const files = sandboxEtcFiles(200007, 200007, 'intern');
    expect(files.passwd).toContain('intern:x:200007:200007:intern:/workspace:/bin/sh\n');
    expect(files.group).toContain('intern:x:200007:\n');
    expect(files.hosts).toBe('127.0.0.1\tlocalhost intern\n::1\tlocalhost ip6-localhost ip6-loopback\n');
  });
});
