import { appendFileSync, readFileSync } from 'node:fs';

/**
 * Where a jest run lists the NATS prefixes its test files made (one per line), so its global teardown deletes
 * the JetStream streams under them even when a test file forgot to, or died before its own cleanup: streams
 * left on the shared server reserve its storage until new ones are refused.
 */
export const TEST_PREFIX_LEDGER_ENV = 'INTERNS_TEST_PREFIX_LEDGER';

/** Notes a prefix in the run's ledger; outside a jest run (no ledger) nothing is noted. */
export function recordTestPrefix(prefix: string): void {
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
