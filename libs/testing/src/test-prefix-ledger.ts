import { appendFileSync, readFileSync } from 'node:fs';

/**
 * Where a jest run lists the NATS prefixes its test files made (one per line), so its global teardown deletes
 * the JetStream streams under them even when a test file forgot to, or died before its own cleanup: streams
 * left on the shared server reserve its storage until new ones are refused.
 */
export const TEST_PREFIX_LEDGER_ENV = 'INTERNS_TEST_PREFIX_LEDGER';

/**
 * Where a test file's own prefixes are listed, on its global object: the jest environment (tools/test/
 * test-environment.ts) reads them when the file ends, passed or failed, and deletes their streams then.
 */
export const TEST_FILE_PREFIXES_GLOBAL = '__internsTestFilePrefixes';

/** The prefixes the running test file made so far (in the file's own global: one list per test file). */
export function testFilePrefixes(global: Record<string, unknown> = globalThis as Record<string, unknown>): string[] {
  const listed = global[TEST_FILE_PREFIXES_GLOBAL];
  if (Array.isArray(listed)) return listed as string[];
  const fresh: string[] = [];
  global[TEST_FILE_PREFIXES_GLOBAL] = fresh;
  return fresh;
}

/**
 * Notes a prefix for the test file (whose environment deletes its streams when the file ends) and in the run's
 * ledger (whose global teardown sweeps again after every file); outside a jest run (no ledger) only the former.
 */
export function recordTestPrefix(prefix: string): void {
  testFilePrefixes().push(prefix);
  const ledger = process.env[TEST_PREFIX_LEDGER_ENV];
  if (ledger !== undefined && ledger !== '') appendFileSync(ledger, `${prefix}\n`);
}

/** The prefixes a ledger holds, each once. */
export function recordedTestPrefixes(ledger: string): string[] {
  let text: string;
  try {
    text = readFileSync(ledger, 'utf8');
  } catch {
    return [];
  }
  return [...new Set(text.split('\n').filter((line) => line !== ''))];
}
