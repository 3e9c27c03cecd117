/**
 * What text may reach a service from a request (the 1.2 preamble of the contract): valid Unicode only (no lone
 * surrogate: PostgreSQL refuses it in `json`, `jsonb` and `text`), no NUL where the field cannot hold one, and
 * JSON nested at most MAX_JSON_DEPTH levels (deeper bodies would exhaust the stack of any recursive code that
 * reads them, `JSON.stringify` first). Checked once, where the gateway reads the request; every refusal is
 * DomainError('invalid_body') naming the field.
 *
 * NUL is refused by default. Free text that may hold one (a prompt, an intern's instructions) is named by the
 * route's `nulAllowedAt` patterns and keeps the event store's documented replacement (U+FFFD when stored).
 */
import { DomainError } from './errors';

export const MAX_JSON_DEPTH = 64;

const NUL = '\u0000';

/**
 * Paths of fields that may hold NUL, dot-separated, `*` standing for any array index or key:
 * `messages.*.content` admits `messages.3.content`.
 */
export type FreeTextPaths = readonly string[];

/** Why a text cannot be taken as it is, or null when it can. */
export function textProblem(text: string, nulAllowed = false): string | null {
  if (!text.isWellFormed()) return 'is not valid Unicode (it holds a lone surrogate)';
  if (!nulAllowed && text.includes(NUL)) return 'must not contain NUL characters';
  return null;
}

/** Throws 400 `invalid_body` naming `field` when `text` cannot be taken as it is. */
export function assertRequestText(field: string, text: string): void {
  const problem = textProblem(text);
  if (problem !== null) throw new DomainError('invalid_body', `${field} ${problem}`);
}

type PathSegment = string | number;

interface Pending {
  value: unknown;
  path: PathSegment[];
  depth: number;
}

function compile(patterns: FreeTextPaths): string[][] {
  return patterns.map((pattern) => pattern.split('.'));
}

function matches(pattern: string[], path: PathSegment[]): boolean {
  if (pattern.length !== path.length) return false;
  return pattern.every((segment, index) => segment === '*' || segment === String(path[index]));
}

function fieldName(path: PathSegment[]): string {
  return path.length === 0 ? 'body' : path.join('.');
}

/**
 * Checks every string (and every key) of a parsed JSON value without recursion, so a value nested 10 000
 * levels deep is refused rather than overflowing the stack.
 */
export function assertRequestJson(value: unknown, nulAllowedAt: FreeTextPaths = []): void {
  const freeText = compile(nulAllowedAt);
  const pending: Pending[] = [{ value, path: [], depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value: item, path, depth } = next;
    if (typeof item === 'string') {
      const problem = textProblem(item, freeText.some((pattern) => matches(pattern, path)));
      if (problem !== null) throw new DomainError('invalid_body', `${fieldName(path)} ${problem}`);
      continue;
    }
    if (typeof item !== 'object' || item === null) continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new DomainError('invalid_body', `body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    if (Array.isArray(item)) {
      item.forEach((element, index) => pending.push({ value: element, path: [...path, index], depth: depth + 1 }));
      continue;
    }
    for (const [key, element] of Object.entries(item)) {
      const problem = textProblem(key);
      if (problem !== null) throw new DomainError('invalid_body', `a field name in ${fieldName(path)} ${problem}`);
      pending.push({ value: element, path: [...path, key], depth: depth + 1 });
    }
  }
}

/**
 * A request body's JSON text, parsed and checked: 400 `invalid_body` when it is not JSON, is nested too deep,
 * or holds text a service cannot take. (V8's JSON.parse does not recurse, so depth is checked after it.)
 */
export function parseRequestJson(text: string, nulAllowedAt: FreeTextPaths = []): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DomainError('invalid_body', 'body is not valid JSON');
  }
  assertRequestJson(value, nulAllowedAt);
  return value;
}
