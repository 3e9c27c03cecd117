/**
 * docs/api.md, the interface reference: its error table is the reasons clients meet (every reason the platform
 * answers is in it, with its status and retryability as `ERROR_REASONS` has them, and no other), every link to one
 * of its sections from the README and docs/ names a heading it has, and no document points outside the repository.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { ERROR_REASONS } from '@interns/contracts';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const doc = read('docs/api.md');
/** The documents a reader follows links from: the README, docs/ and the benchmarks' README. */
const documents = ['README.md', 'bench/README.md', ...readdirSync(new URL('docs/', root)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

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

/** GitHub's anchor of a heading: lowercased, punctuation but `-` and `_` dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-');
}

describe('docs/api.md', () => {
  it('documents every error reason with its status and retryability, and no other', () => {
    expect(Object.fromEntries(documentedReasons())).toEqual(ERROR_REASONS);
  });

  it('has every section a document links to', () => {
    const anchors = new Set([...doc.matchAll(/^#{2,3} (.+)$/gm)].map((match) => anchorOf(match[1] ?? '')));
    const links = documents.flatMap((path) =>
      [...read(path).matchAll(/\]\((?:\.\.\/|docs\/)?(?:docs\/)?api\.md#([^)]+)\)/g)].map((match) => ({ path, anchor: match[1] })),
    );
    expect(links.length).toBeGreaterThanOrEqual(30);
    expect(links.filter((link) => !anchors.has(link.anchor ?? ''))).toEqual([]);
  });

  it('is what the documents cite: none points at a file outside the repository', () => {
    for (const path of documents) expect({ path, outside: read(path).match(/shared\/CONTRACT|CONTRACT\.md|\]\(\/|\]\(\.\.\/\.\.\//g) }).toEqual({ path, outside: null });
  });
});
