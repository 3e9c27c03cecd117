import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import preflight, { missingPrerequisites, PREREQUISITES } from './preflight';

describe('test preflight', () => {
  let empty: string;
  let tools: string;

  beforeAll(async () => {
    empty = await mkdtemp(join(tmpdir(), 'interns-preflight-empty-'));
    tools = await mkdtemp(join(tmpdir(), 'interns-preflight-tools-'));
    await writeFile(join(tools, 'prlimit'), '#!/bin/sh\n', { mode: 0o755 });
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
    ]);
    expect(missingPrerequisites([empty, tools].join(delimiter))).toEqual(['bubblewrap is not installed: apt-get install -y bubblewrap']);
  });

  it('finds an executable anywhere on PATH', async () => {
    await chmod(join(tools, 'bwrap'), 0o755);
    expect(missingPrerequisites(['', empty, tools].join(delimiter))).toEqual([]);
  });

  it('passes on this machine, which has what the README names', () => {
    expect(PREREQUISITES.map(({ debianPackage }) => debianPackage)).toEqual(['bubblewrap', 'util-linux']);
    expect(() => preflight()).not.toThrow();
  });
});
