/**
 * Jest's globalSetup: the preflight (the tools the tests need), then the run's ledger of NATS prefixes, whose
 * streams the global teardown deletes. Workers start after this and inherit the ledger's path from the environment.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_PREFIX_LEDGER_ENV } from '../../libs/testing/src/test-prefix-ledger';
import preflight from './preflight';

export default function globalSetup(): void {
  preflight();
  process.env[TEST_PREFIX_LEDGER_ENV] = join(mkdtempSync(join(tmpdir(), 'interns-test-ledger-')), 'prefixes');
}
