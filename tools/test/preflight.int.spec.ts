import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import preflight, { KUBECTL, missingPrerequisites, notInstalled, PREREQUISITES } from './preflight';

describe('test preflight', () => {
  let empty: string;
  let tools: string;

  beforeAll(async () => {
    empty = await mkdtemp(join(tmpdir(), 'interns-preflight-empty-'));
    tools = await mkdtemp(join(tmpdir(), 'interns-preflight-tools-'));
    await writeFile(join(tools, 'prlimit'), '#!/bin/sh\n', { mode: 0o755 });
    await writeFile(join(tools, 'kubectl'), '#!/bin/sh\n', { mode: 0o755 });
    await writeFile(join(tools, 'mkfs.ext4'), '#!/bin/sh\n', { mode: 0o755 });
    await writeFile(join(tools, 'socat'), '#!/bin/sh\n', { mode: 0o755 });
    await writeFile(join(tools, 'chromium'), '#!/bin/sh\n', { mode: 0o755 });
    // Present but not executable: does not count.
    await writeFile(join(tools, 'bwrap'), '#!/bin/sh\n', { mode: 0o644 });
  });

  afterAll(async () => {
    await rm(empty, { recursive: true, force: true });
    await rm(tools, { recursive: true, force: true });
  });

  it('names the package of each missing tool, one line each', () => {
    expect(missingPrerequisites(empty)).toEqual([
      'bubblewrap is not installed: apt-get install -y bubblewrap',
      'util-linux is not installed: apt-get install -y util-linux',
      'e2fsprogs is not installed: apt-get install -y e2fsprogs',
      'socat is not installed: apt-get install -y socat',
      'chromium is not installed: apt-get install -y chromium',
      notInstalled(KUBECTL),
    ]);
    expect(missingPrerequisites([empty, tools].join(delimiter))).toEqual(['bubblewrap is not installed: apt-get install -y bubblewrap']);
  });

  it('names kubectl, why the tests need it and where to get it, on one line', () => {
    const line = notInstalled(KUBECTL);
    expect(line).toMatch(/^kubectl is not installed: .*kubectl kustomize.*https:\/\/kubernetes\.io\/docs\/tasks\/tools\/$/);
    expect(line).not.toContain('\n');
    expect(missingPrerequisites(empty, [KUBECTL])).toEqual([line]);
  });

  it('stops the run with that line alone when only kubectl is missing', async () => {
    const sandboxTools = await mkdtemp(join(tmpdir(), 'interns-preflight-sandbox-'));
    const path = process.env.PATH;
    try {
      for (const command of ['bwrap', 'prlimit', 'mkfs.ext4', 'socat', 'chromium']) await writeFile(join(sandboxTools, command), '#!/bin/sh\n', { mode: 0o755 });
      process.env.PATH = sandboxTools;
      expect(() => preflight()).toThrow(new Error(notInstalled(KUBECTL)));
    } finally {
      process.env.PATH = path;
      await rm(sandboxTools, { recursive: true, force: true });
    }
  });

  it('finds an executable anywhere on PATH', async () => {
    await chmod(join(tools, 'bwrap'), 0o755);
    expect(missingPrerequisites(['', empty, tools].join(delimiter))).toEqual([]);
  });

  it('passes on this machine, which has what the README names', () => {
    expect(PREREQUISITES.map(({ name }) => name)).toEqual(['bubblewrap', 'util-linux', 'e2fsprogs', 'socat', 'chromium', 'kubectl']);
    expect(() => preflight()).not.toThrow();
  });
});
