/**
 * The jest environment every test file runs in deletes the streams of the NATS prefixes the file made when it ends,
 * also when the file fails and its afterAll throws: a jest of its own runs such a file (leaky-file.fixture.ts) with
 * the global teardown switched off, so only the environment can have deleted them.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { deleteTestStreams } from '@interns/testing';

const run = promisify(execFile);
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

describe('test environment', () => {
  let dir: string;
  let prefix = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'test-environment-spec-'));
  });

  afterAll(async () => {
    if (prefix !== '') await deleteTestStreams(prefix, NATS_URL).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it("deletes a failing file's streams when the file ends", async () => {
    const noTeardown = join(dir, 'no-teardown.cjs');
    await writeFile(noTeardown, 'module.exports = async () => {};\n');
    const out = join(dir, 'prefix');
    const env: NodeJS.ProcessEnv = { ...process.env, LEAKY_FILE_PREFIX_OUT: out, NATS_URL };
    delete env.INTERNS_TEST_PREFIX_LEDGER;
    const jest = resolve('node_modules/jest/bin/jest.js');
    const args = ['--experimental-vm-modules', jest, '--testMatch', '**/tools/test/leaky-file.fixture.ts', '--globalTeardown', noTeardown, '--runInBand', '--ci'];
    const failed = await run(process.execPath, args, { env, timeout: 120_000 }).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain('this file never cleans up');
    prefix = await readFile(out, 'utf8');
    expect(prefix).toMatch(/^test_[0-9a-f]{10}$/);

    const nc = await connect({ servers: NATS_URL });
    try {
      const names: string[] = [];
      for await (const name of (await jetstreamManager(nc)).streams.names()) names.push(name);
      expect(names.filter((name) => name.startsWith(`${prefix}_`))).toEqual([]);
    } finally {
      await nc.close();
    }
  }, 150_000);
});
