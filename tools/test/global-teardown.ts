/**
 * Jest's globalTeardown: deletes the JetStream streams under every NATS prefix the run's test files made (their
 * ledger), including those of a file that did not clean up or died first, so repeated runs never fill the shared
 * server's storage. Streams of other runs on the same server are left alone.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { recordedTestPrefixes, TEST_PREFIX_LEDGER_ENV } from '../../libs/testing/src/test-prefix-ledger';
import { deleteStreamsOfPrefixes } from '../../libs/testing/src/test-streams';

export default async function globalTeardown(): Promise<void> {
  const ledger = process.env[TEST_PREFIX_LEDGER_ENV];
  if (ledger === undefined || ledger === '') return;
  try {
    await deleteStreamsOfPrefixes(recordedTestPrefixes(ledger));
  } catch (error) {
    process.stderr.write(`test streams of this run could not be deleted: ${(error as Error).message}\n`);
  } finally {
    rmSync(dirname(ledger), { recursive: true, force: true });
  }
}
