import { bwrapArguments, prlimitArguments, SANDBOX_HOME, sandboxEtcFiles, type SandboxSpec } from './bwrap-arguments';

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

  it('sets no file size limit on an image disk, which bounds the workspace itself', () => {
    const unbounded = bwrapArguments({ ...SPEC, fileSizeBytes: null });
    expect(unbounded.slice(unbounded.indexOf('--') + 4)).toEqual(['sh', SPEC.command, '/usr/bin/prlimit', 'unlimited']);
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
