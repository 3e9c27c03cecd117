import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CgroupsUnavailable, handControllersDown, InternCgroups } from './intern-cgroups';

/** The cgroup files as plain files in a directory: what is written where, for both hierarchies. */
describe('InternCgroups on a cgroup tree', () => {
  let root: string;
  const internId = randomUUID();
  const limits = { memoryBytes: 64 * 1024 * 1024, cpuMillicores: 1500, maxProcesses: 32 };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'cgroups-spec-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const read = (path: string) => readFile(join(root, path), 'utf8');

  it('v1: an intern cgroup below the service own cgroup in memory, pids and cpu, with its limits', async () => {
    for (const controller of ['memory', 'pids', 'cpu']) await mkdir(join(root, controller), { recursive: true });
    const membership = '9:pids:/\n4:memory:/pod/abc\n1:cpu,cpuacct:/pod\n0::/\n';
    const cgroups = await InternCgroups.open(root, membership);
    expect(cgroups.version).toBe(1);

    const cgroup = await cgroups.prepare(internId, limits);
    expect(cgroup.procsFiles).toEqual([
      join(root, 'memory/pod/abc/interns', internId, 'cgroup.procs'),
      join(root, 'pids/interns', internId, 'cgroup.procs'),
      join(root, 'cpu/pod/interns', internId, 'cgroup.procs'),
    ]);
    expect(await read(`memory/pod/abc/interns/${internId}/memory.limit_in_bytes`)).toBe(String(limits.memoryBytes));
    expect(await read(`pids/interns/${internId}/pids.max`)).toBe('32');
    expect(await read(`cpu/pod/interns/${internId}/cpu.cfs_quota_us`)).toBe('150000');
    expect(await read(`cpu/pod/interns/${internId}/cpu.cfs_period_us`)).toBe('100000');

    expect(await cgroup.oomKills()).toBe(0);
    await writeFile(join(root, `memory/pod/abc/interns/${internId}/memory.oom_control`), 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n');
    expect(await cgroup.oomKills()).toBe(3);
  });

  it('v2: hands memory, pids and cpu down to an interns cgroup, and limits the intern', async () => {
    const own = join(root, 'pod');
    await mkdir(own, { recursive: true });
    await writeFile(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids');
    await writeFile(join(own, 'cgroup.controllers'), 'cpu memory pids');
    const cgroups = await InternCgroups.open(root, '0::/pod\n');
    expect(cgroups.version).toBe(2);
    expect(await read('pod/cgroup.subtree_control')).toBe('+memory +pids +cpu');
    expect(await read('pod/interns/cgroup.subtree_control')).toBe('+memory +pids +cpu');

    const cgroup = await cgroups.prepare(internId, limits);
    expect(cgroup.procsFiles).toEqual([join(own, 'interns', internId, 'cgroup.procs')]);
    expect(await read(`pod/interns/${internId}/memory.max`)).toBe(String(limits.memoryBytes));
    expect(await read(`pod/interns/${internId}/pids.max`)).toBe('32');
    expect(await read(`pod/interns/${internId}/cpu.max`)).toBe('150000 100000');
    await writeFile(join(own, 'interns', internId, 'memory.events'), 'low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n');
    expect(await cgroup.oomKills()).toBe(2);
  });

  it('v2: when the kernel refuses while the cgroup holds processes (a namespace root too), moves them into a leaf first', async () => {
    const own = join(root, 'ns-root');
    await mkdir(own, { recursive: true });
    await writeFile(join(own, 'cgroup.procs'), '1\n42\n2\n');
    const writes: string[] = [];
    let refusals = 0;
    const kernel = async (path: string, text: string) => {
      writes.push(`${path.slice(own.length + 1)} ${text}`);
      if (path.endsWith('cgroup.subtree_control') && refusals++ === 0) throw Object.assign(new Error('busy'), { code: 'EBUSY' });
      // pid 2 stands for a kernel thread, which cannot move.
      if (text === '2') throw Object.assign(new Error('invalid'), { code: 'EINVAL' });
    };
    await handControllersDown(own, kernel);
    expect(writes).toEqual([
      'cgroup.subtree_control +memory +pids +cpu',
      'service/cgroup.procs 1',
      'service/cgroup.procs 42',
      'service/cgroup.procs 2',
      'cgroup.subtree_control +memory +pids +cpu',
    ]);
  });

  it("removes an intern's cgroup in every hierarchy, and is done when there is none", async () => {
    for (const controller of ['memory', 'pids', 'cpu']) await mkdir(join(root, controller), { recursive: true });
    const cgroups = await InternCgroups.open(root, '4:memory:/\n9:pids:/\n1:cpu:/\n');
    // cgroupfs removes a cgroup with its files by rmdir; plain directories here hold none.
    for (const controller of ['memory', 'pids', 'cpu']) await mkdir(join(root, controller, 'interns', internId));
    await cgroups.remove(internId);
    for (const controller of ['memory', 'pids', 'cpu']) {
      await expect(stat(join(root, controller, 'interns', internId))).rejects.toMatchObject({ code: 'ENOENT' });
    }
    await cgroups.remove(internId);
  });

  it('fails closed, naming why, without a usable hierarchy', async () => {
    await expect(InternCgroups.open(root, '4:memory:/\n')).rejects.toThrow(new CgroupsUnavailable(`the memory controller is not mounted at ${join(root, 'memory')}`));
    await writeFile(join(root, 'cgroup.controllers'), 'cpu memory');
    await expect(InternCgroups.open(root, '0::/\n')).rejects.toThrow('is not given the pids controller(s)');
  });

  it('refuses a name that is not an intern id', async () => {
    for (const controller of ['memory', 'pids', 'cpu']) await mkdir(join(root, controller), { recursive: true });
    const cgroups = await InternCgroups.open(root, '4:memory:/\n9:pids:/\n1:cpu:/\n');
    await expect(cgroups.prepare('../escape', limits)).rejects.toThrow('not a cgroup name');
  });
});
