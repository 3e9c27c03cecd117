/**
 * docs/api.md's error table is the reasons clients meet: every reason the platform answers is in it, with
 * its status and retryability as `ERROR_REASONS` has them, and it names no reason the platform does not have.
 */
import { readFileSync } from 'node:fs';
import { ERROR_REASONS } from '@interns/contracts';

const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');

/** The rows of the table under `## 2. Errors` that name a reason: reason -> status and retryable. */
function documentedReasons(): Map<string, { status: number; retryable: boolean }> {
  const section = doc.split(/^## 2\. Errors$/m)[1]?.split(/^## /m)[0] ?? '';
  const reasons = new Map<string, { status: number; retryable: boolean }>();
  for (const row of section.split('\n').filter((line) => /^\| \d{3} \| `/.test(line))) {
    const [, status, reason, retryable] = row.split('|').map((cell) => cell.trim());
    reasons.set(reason.replace(/`/g, ''), { status: Number(status), retryable: retryable === 'true' });
  }
  return reasons;
}

describe('docs/api.md', () => {
  it('documents every error reason with its status and retryability, and no other', () => {
    expect(Object.fromEntries(documentedReasons())).toEqual(ERROR_REASONS);
  });
});
