import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';
import { syscallProbe } from '@interns/testing';
import { soleHolderLeases } from '../workspace-disk-leases';
import { DirectoryDisks } from '../directory-disks';
import { ImageDisks } from '../image-disks';
import type { WorkspaceDisks } from '../workspace-disk';
import { BubblewrapShell, type SandboxLimits } from './bubblewrap-shell';
import { WORKSPACE_STAGING_DIR } from './sandbox-host';

const libc = koffi.load('libc.so.6');
/** dup(2) makes a descriptor without close-on-exec, as one inherited from a parent would be. */
const dup = libc.func('int dup(int fd)') as (fd: number) => number;
const close = libc.func('int close(int fd)') as (fd: number) => number;

/** The sandboxed shell on this host's real bubblewrap, as fixed uids (the e2e battery allocates them from the database). */
describe('BubblewrapShell', () => {
  const UID_BASE = 230000 + Math.floor(Math.random() * 10000) * 10;
  const LIMITS: SandboxLimits = {
    timeoutMs: 5000,
    outputLimitBytes: 64 * 1024,
    maxProcesses: 32,
    memoryBytes: 512 * 1024 * 1024,
    internMemoryBytes: 256 * 1024 * 1024,
    cpuMillicores: 1000,
    tmpBytes: 4 * 1024 * 1024,
  };
  const QUOTA = { bytes: 1024 * 1024, inodes: 100_000 };
  const directories = new DirectoryDisks(QUOTA);
  let root: string;
  let workspacesDir: string;
  const uids = new Map<string, number>();
  const internA = randomUUID();
  const internB = randomUUID();
  uids.set(internA, UID_BASE + 1);
  uids.set(internB, UID_BASE + 2);

  const shellWith = (limits: Partial<SandboxLimits> = {}, disks: WorkspaceDisks = directories) =>
    new BubblewrapShell({
      users: { uidOf: async (internId) => uids.get(internId) ?? UID_BASE + 9 },
      workspacesDir,
      disks,
      probeUid: UID_BASE,
      limits: { ...LIMITS, ...limits },
    });
  const run = (internId: string, command: string, options: { limits?: Partial<SandboxLimits>; disks?: WorkspaceDisks; signal?: AbortSignal } = {}) =>
    shellWith(options.limits, options.disks).run({
      internId,
      workspace: join(workspacesDir, internId),
      command,
      signal: options.signal ?? new AbortController().signal,
    });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sandbox-spec-'));
    await chmod(root, 0o711);
    workspacesDir = join(root, 'workspaces');
    await mkdir(join(workspacesDir, internA), { recursive: true });
    await mkdir(join(workspacesDir, internB), { recursive: true });
  });

  afterAll(async () => {
    for (const internId of [internA, internB]) await shellWith().forget(internId);
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('passes its self-test on this host', async () => {
    expect(await shellWith().selfTest()).toBeNull();
  });

  it("runs as the intern's own host uid in its workspace, which it then owns", async () => {
    await writeFile(join(workspacesDir, internA, 'notes.txt'), 'inside\n');
    const output = await run(internA, 'id -u; id -g; pwd; echo "$HOME"; cat notes.txt; touch made-here');
    expect(output).toBe(`${UID_BASE + 1}\n${UID_BASE + 1}\n/workspace\n/workspace\ninside\n`);
    const made = await stat(join(workspacesDir, internA, 'made-here'));
    expect(made.uid).toBe(UID_BASE + 1);
    const workspace = await stat(join(workspacesDir, internA));
    expect([workspace.uid, workspace.mode & 0o777]).toEqual([UID_BASE + 1, 0o700]);
  });

  it('has no capabilities, no new privileges and nothing of the service environment', async () => {
    process.env.SANDBOX_SPEC_SECRET = 'do-not-leak';
    try {
      const output = await run(internA, 'grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status; env; cat /proc/1/environ | tr "\\0" "\\n"');
      expect(output).toContain('CapEff:\t0000000000000000');
      expect(output).toContain('CapBnd:\t0000000000000000');
      expect(output).toContain('NoNewPrivs:\t1');
      expect(output).not.toContain('do-not-leak');
      expect(output).toContain('HOME=/workspace');
    } finally {
      delete process.env.SANDBOX_SPEC_SECRET;
    }
  });

  it('sees only its own processes, a read-only system and no other workspace', async () => {
    const output = await run(internA, `ls /proc | grep -cE '^[0-9]+$'; touch /usr/x 2>&1; touch /x 2>&1; ls / ; ls ${workspacesDir} 2>&1`);
    const [count] = output.split('\n');
    expect(Number(count)).toBeLessThanOrEqual(4);
    expect(output).toMatch(/touch: cannot touch '\/usr\/x': Read-only file system/);
    expect(output).toMatch(/touch: cannot touch '\/x': Read-only file system/);
    expect(output).not.toContain(internB);
    expect(output).toContain(`ls: cannot access '${workspacesDir}': No such file or directory`);
  });

  it('has no network', async () => {
    const output = await run(internA, `bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432' 2>&1; echo "exit=$?"`);
    expect(output).toMatch(/exit=1/);
    expect(output).toMatch(/Network is unreachable|Connection refused/);
  });

  it('on a directory disk, fails a write past the workspace quota inside the sandbox, and says so', async () => {
    const output = await run(internB, 'dd if=/dev/zero of=big bs=64k count=64 2>&1; ls -l big');
    expect(output).toMatch(/File too large/);
    expect(output).toMatch(/\[workspace quota reached: \d+ of 1048576 bytes used; writing past it fails\]/);
    const size = (await stat(join(workspacesDir, internB, 'big'))).size;
    expect(size).toBeLessThanOrEqual(QUOTA.bytes);
    // Full: no file may grow; removing files frees the quota for the next command (each command's limit is
    // what was left when it started).
    expect(await run(internB, 'echo more > more.txt; echo "exit=$?"')).toMatch(/exit=[12]/);
    expect(await run(internB, 'rm big more.txt')).not.toMatch(/quota reached/);
    expect(await run(internB, 'echo small > small.txt && cat small.txt')).toBe('small\n');
  });

  describe('on an image disk (WORKSPACE_DISK=image): the quota holds for the whole workspace', () => {
    const internC = randomUUID();
    uids.set(internC, UID_BASE + 3);
    let images: ImageDisks;
    const workspaceC = () => join(workspacesDir, internC);

    beforeAll(async () => {
      images = new ImageDisks({ imagesDir: join(root, 'disks'), quota: { bytes: 8 * 1024 * 1024, inodes: 128 }, leases: soleHolderLeases() });
      await images.create(internC, workspaceC());
    });

    afterAll(async () => {
      await images?.remove(internC, workspaceC());
    });

    it('stops several files that each fit from passing it together, with ENOSPC in the writer', async () => {
      const output = await run(internC, 'for n in 1 2 3 4 5; do dd if=/dev/zero of=f$n bs=64k count=32 2>&1 | grep -o "No space left on device" | head -1; done; du -s -B1 . | cut -f1', {
        disks: images,
      });
      expect(output).toContain('No space left on device');
      expect(output).toMatch(/\[workspace quota reached: \d+ of 8388608 bytes used; writing past it fails\]/);
      const used = Number(output.split('\n').find((line) => /^\d+$/.test(line)));
      expect(used).toBeGreaterThan(4 * 1024 * 1024);
      expect(used).toBeLessThanOrEqual(8 * 1024 * 1024);
      // The next command finds the disk still full, and frees it.
      expect(await run(internC, 'dd if=/dev/zero of=more bs=64k count=8 2>&1 | grep -o "No space left on device"', { disks: images })).toMatch(
        /^No space left on device\n/,
      );
      expect(await run(internC, 'rm -f f1 f2 f3 f4 f5 more; echo small > small.txt && cat small.txt', { disks: images })).toBe('small\n');
    });

    it('bounds the number of files and directories (inodes)', async () => {
      const output = await run(internC, 'mkdir many && cd many && for n in $(seq 1 300); do touch f$n 2>/dev/null || { echo "refused at $n"; break; }; done', { disks: images });
      expect(output).toMatch(/refused at \d+/);
      expect(Number(/refused at (\d+)/.exec(output)?.[1])).toBeLessThanOrEqual(128);
      expect(output).toContain('[workspace quota reached: it holds the most files and directories it may (128); creating more fails]');
      expect(await run(internC, 'rm -rf many && touch fine && echo fine', { disks: images })).toBe('fine\n');
    });

    it('is attached again after a detach (a restart of the service), files kept', async () => {
      await run(internC, 'echo kept > kept.txt', { disks: images });
      await images.detachAll();
      const fresh = new ImageDisks({ imagesDir: join(root, 'disks'), quota: { bytes: 8 * 1024 * 1024, inodes: 128 }, leases: soleHolderLeases() });
      expect(await fresh.attach(internC, workspaceC())).toBe(true);
      expect(await run(internC, 'cat kept.txt', { disks: fresh })).toBe('kept\n');
      images = fresh;
    });
  });

  it('reaches a workspace below a directory other users cannot search (a clone in /root), and leaves no mount behind', async () => {
    const closed = await mkdtemp(join(tmpdir(), 'sandbox-closed-'));
    try {
      await chmod(closed, 0o700);
      const internD = randomUUID();
      uids.set(internD, UID_BASE + 4);
      const closedWorkspaces = join(closed, 'workspaces');
      await mkdir(join(closedWorkspaces, internD), { recursive: true });
      const shell = new BubblewrapShell({
        users: { uidOf: async () => UID_BASE + 4 },
        workspacesDir: closedWorkspaces,
        disks: directories,
        probeUid: UID_BASE,
        limits: LIMITS,
      });
      expect(await shell.selfTest()).toBeNull();
      const answer = await shell.run({ internId: internD, workspace: join(closedWorkspaces, internD), command: 'id -u; pwd; echo hi > made', signal: new AbortController().signal });
      expect(answer).toBe(`${UID_BASE + 4}\n/workspace\n`);
      expect((await stat(join(closedWorkspaces, internD, 'made'))).uid).toBe(UID_BASE + 4);
      // The bind lived in the command's own mount namespace only.
      expect(await readdir(WORKSPACE_STAGING_DIR)).toEqual([]);
      expect(await readFile('/proc/self/mountinfo', 'utf8')).not.toContain(WORKSPACE_STAGING_DIR);
      await shell.forget(internD);
    } finally {
      await rm(closed, { recursive: true, force: true });
    }
  });

  it('bounds the number of processes (a fork bomb) and leaves nothing running afterwards', async () => {
    const started = Date.now();
    const output = await run(internA, 'bomb() { bomb | bomb & }; bomb; sleep 1; echo survived', { limits: { timeoutMs: 4000 } });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(output).toMatch(/fork|Resource temporarily unavailable|survived|timed out/i);
    await expectNoProcessesOf(UID_BASE + 1);
  });

  it('leaves no survivor of setsid or background jobs once the command ends or times out', async () => {
    expect(await run(internA, 'setsid sh -c "sleep 30" & nohup sleep 30 >/dev/null 2>&1 & echo started')).toBe('started\n');
    await expectNoProcessesOf(UID_BASE + 1);
    expect(await run(internA, 'setsid sh -c "sleep 30" & sleep 30', { limits: { timeoutMs: 300 } })).toBe('[timed out after 300 ms]');
    await expectNoProcessesOf(UID_BASE + 1);
  });

  it('ends everything when the run is cancelled', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    expect(await run(internA, 'sleep 30 & sleep 30', { signal: controller.signal })).toBe('[cancelled]');
    await expectNoProcessesOf(UID_BASE + 1);
  });

  it('reports exit codes and output like the unsandboxed shell', async () => {
    expect(await run(internA, 'echo out; echo err >&2; exit 3')).toBe('out\nerr\n[exit code 3]');
    expect(await run(internA, 'yes', { limits: { outputLimitBytes: 10 } })).toBe(`${'y\n'.repeat(5)}[output truncated at 10 bytes]`);
  });

  it('fails closed, naming the problem, when the sandbox cannot be built', async () => {
    const answer = await run(internA, 'touch ran', { limits: { tmpBytes: 0 } });
    expect(answer).toBe('sandbox unavailable: bwrap: --size takes a non-zero number of bytes');
    await expect(readFile(join(workspacesDir, internA, 'ran'))).rejects.toThrow(/ENOENT/);
  });

  it('runs under a syscall filter: keyrings, tracing, kernel programs, io_uring, mounts and namespaces are refused', async () => {
    const probe = syscallProbe();
    expect((await run(internA, probe.command)).trim().split('\n')).toEqual(probe.expected);
  });

  describe("within the intern's memory (its cgroup, INTERN_MEMORY_BYTES)", () => {
    // RLIMIT_FSIZE (what is left of the workspace quota) bounds files in /tmp too: lifted, so memory is what stops.
    const small = { internMemoryBytes: 64 * 1024 * 1024, tmpBytes: 128 * 1024 * 1024, timeoutMs: 20_000 };
    const roomy = new DirectoryDisks({ bytes: 1024 ** 3, inodes: QUOTA.inodes });

    it('kills a process past it, says so, and the next command runs', async () => {
      const output = await run(internA, `python3 -c "b = b'x' * (200 * 1024 * 1024); print('survived')"`, { limits: small, disks: roomy });
      expect(output).not.toContain('survived');
      expect(output).toContain('[memory limit reached]');
      expect(await run(internA, 'echo next', { limits: small, disks: roomy })).toBe('next\n');
    });

    it('counts its processes together: three that fit alone do not fit at once', async () => {
      const each = "python3 -c \"import time; b = b'x' * (30 * 1024 * 1024); time.sleep(1); print('kept')\"";
      const output = await run(internA, `${each} & ${each} & ${each} & wait`, { limits: small, disks: roomy });
      expect(output.match(/kept/g)?.length ?? 0).toBeLessThan(3);
      expect(output).toContain('[memory limit reached]');
    });

    it('counts its /tmp: filling a tmpfs larger than its memory kills the writer', async () => {
      const output = await run(internA, 'dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1 | tail -1; echo "dd=$?"', { limits: small, disks: roomy });
      expect(output).toContain('[memory limit reached]');
      expect(await run(internA, 'echo next', { limits: small, disks: roomy })).toBe('next\n');
    });

    it('runs the sandbox where the kernel picks it first when the machine runs out of memory', async () => {
      expect(await run(internA, 'cat /proc/self/oom_score_adj')).toBe('1000\n');
    });
  });

  it('inherits no descriptor of the service beyond stdio, even one not marked close-on-exec', async () => {
    const leaked = dup(2);
    try {
      expect(leaked).toBeGreaterThan(2);
      // ls itself holds one more: the directory it reads.
      expect(await run(internA, 'ls /proc/self/fd')).toBe('0\n1\n2\n3\n');
    } finally {
      close(leaked);
    }
  });

  it('fails closed, naming the package, on a host without bubblewrap', async () => {
    const shell = new BubblewrapShell({
      users: { uidOf: async () => UID_BASE + 1 },
      workspacesDir,
      disks: directories,
      probeUid: UID_BASE,
      limits: LIMITS,
      toolDirectories: [root],
    });
    expect(await shell.selfTest()).toBe('sandbox unavailable: install bubblewrap (no bwrap on this host)');
    const answer = await shell.run({ internId: internA, workspace: join(workspacesDir, internA), command: 'touch ran', signal: new AbortController().signal });
    expect(answer).toBe('sandbox unavailable: install bubblewrap (no bwrap on this host)');
    await expect(readFile(join(workspacesDir, internA, 'ran'))).rejects.toThrow(/ENOENT/);
  });
});

/** No process of `uid` left on the host (zombies awaiting their reaper count as gone). */
async function expectNoProcessesOf(uid: number): Promise<void> {
  const deadline = Date.now() + 3000;
  let listing = '';
  while (Date.now() < deadline) {
    try {
      listing = execFileSync('ps', ['-u', String(uid), '-o', 'pid=,stat=,args='], { encoding: 'utf8' });
    } catch {
      listing = ''; // ps exits 1 when it lists nothing
    }
    const alive = listing.split('\n').filter((line) => line.trim() !== '' && !/^\s*\d+\s+Z/.test(line));
    if (alive.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`processes of uid ${uid} survived:\n${listing}`);
}
