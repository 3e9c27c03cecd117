/**
 * Jest's globalSetup: the preflight (the tools the tests need), then the run's ledger of NATS prefixes, whose
 * streams the global teardown deletes. Workers start after this and inherit the ledger's path from the environment,
 * and with it NODE_COMPILE_CACHE: the suite starts some 300 service and admin processes from the same built files, and
 * Node's on-disk compile cache spares each the compiling of the modules it loads (a fifth of a service's start).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_PREFIX_LEDGER_ENV } from '../../libs/testing/src/test-prefix-ledger';
import preflight from './preflight';

export default function globalSetup(): void {
  preflight();
  process.env[TEST_PREFIX_LEDGER_ENV] = join(mkdtempSync(join(tmpdir(), 'interns-test-ledger-')), 'prefixes');
  process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'interns-node-compile-cache');
}
