import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { recordedTestPrefixes, recordTestPrefix, TEST_PREFIX_LEDGER_ENV, testNatsPrefix } from '@interns/testing';
import globalTeardown from './global-teardown';

/** The run's ledger of NATS prefixes, and the teardown that deletes their streams (and nobody else's). */
describe('test prefix ledger', () => {
  const saved = process.env[TEST_PREFIX_LEDGER_ENV];
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ledger-spec-'));
    process.env[TEST_PREFIX_LEDGER_ENV] = join(dir, 'prefixes');
  });

  afterEach(async () => {
    process.env[TEST_PREFIX_LEDGER_ENV] = saved;
    await rm(dir, { recursive: true, force: true });
  });

  it('notes each prefix a test file makes, once', () => {
    const first = testNatsPrefix();
    const second = testNatsPrefix();
    recordTestPrefix(first);
    expect(recordedTestPrefixes(join(dir, 'prefixes'))).toEqual([first, second]);
  });

  it("deletes the streams under the ledger's prefixes at teardown, and leaves another run's alone", async () => {
    const ours = testNatsPrefix();
    process.env[TEST_PREFIX_LEDGER_ENV] = join(dir, 'other');
    const theirs = testNatsPrefix();
    process.env[TEST_PREFIX_LEDGER_ENV] = join(dir, 'prefixes');
    const nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    try {
      const jsm = await jetstreamManager(nc);
      for (const prefix of [ours, theirs]) {
        await jsm.streams.add({ name: `${prefix}_events`, subjects: [`${prefix}.evt.>`], max_bytes: 1024 * 1024 });
      }
      await globalTeardown();
      const names: string[] = [];
      for await (const name of jsm.streams.names()) names.push(name);
      expect(names).not.toContain(`${ours}_events`);
      expect(names).toContain(`${theirs}_events`);
      await jsm.streams.delete(`${theirs}_events`);
    } finally {
      await nc.close();
    }
  });
});
