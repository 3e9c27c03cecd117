/**
 * Jest's environment for every test file: node's, plus one thing when the file ends (after its own afterAll hooks,
 * whether it passed, failed or its hooks threw): the JetStream streams under the NATS prefixes the file made
 * (testNatsPrefix) are deleted. A file that forgot to, or died before its own cleanup, leaves nothing behind on the
 * shared server; the global teardown sweeps the run's ledger once more at the end.
 */
import { TestEnvironment } from 'jest-environment-node';
import { testFilePrefixes } from '../../libs/testing/src/test-prefix-ledger';
import { deleteStreamsOfPrefixes } from '../../libs/testing/src/test-streams';

/** A NATS server that does not answer must not hold the run up: the global teardown tries again. */
const CLEANUP_TIMEOUT_MS = 15_000;

export default class InternsTestEnvironment extends TestEnvironment {
  override async teardown(): Promise<void> {
    const prefixes = [...testFilePrefixes(this.global as unknown as Record<string, unknown>)];
    if (prefixes.length > 0) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, fail) => {
        timer = setTimeout(() => fail(new Error(`no answer within ${CLEANUP_TIMEOUT_MS} ms`)), CLEANUP_TIMEOUT_MS);
      });
      try {
        await Promise.race([deleteStreamsOfPrefixes(prefixes), timeout]);
      } catch (error) {
        process.stderr.write(`streams of ${prefixes.join(', ')} not deleted at the end of the file: ${(error as Error).message}\n`);
      } finally {
        clearTimeout(timer);
      }
    }
    await super.teardown();
  }
}
