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
function textProblem(text: string, nulAllowed = false): string | null {
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

/** A value still to check; its path is kept as a link to its parent, spelled out only when needed. */
interface Pending {
  value: unknown;
  key: PathSegment | null;
  parent: Pending | null;
  depth: number;
}

function compile(patterns: FreeTextPaths): string[][] {
  return patterns.map((pattern) => pattern.split('.'));
}

function pathOf(entry: Pending): PathSegment[] {
  const path: PathSegment[] = [];
  for (let at: Pending | null = entry; at !== null && at.key !== null; at = at.parent) path.push(at.key);
  return path.reverse();
}

function matches(pattern: string[], path: PathSegment[]): boolean {
  return pattern.length === path.length && pattern.every((segment, index) => segment === '*' || segment === String(path[index]));
}

function fieldName(path: PathSegment[]): string {
  return path.length === 0 ? 'body' : path.join('.');
}

/** Strings and containers need a look; numbers, booleans and null do not, and are never queued. */
function needsCheck(value: unknown): boolean {
  return typeof value === 'string' || (typeof value === 'object' && value !== null);
}

/**
 * Checks every string (and every key) of a parsed JSON value without recursion, so a value nested 10 000
 * levels deep is refused rather than overflowing the stack. Memory stays in proportion to the body: one small
 * entry per string or container, a link to its parent instead of a copy of its path.
 */
function assertRequestJson(value: unknown, nulAllowedAt: FreeTextPaths = []): void {
  const freeText = compile(nulAllowedAt);
  const freeTextDepths = new Set(freeText.map((pattern) => pattern.length));
  const refuse = (entry: Pending, problem: string, prefix = ''): never => {
    throw new DomainError('invalid_body', `${prefix}${fieldName(pathOf(entry))} ${problem}`);
  };
  const pending: Pending[] = needsCheck(value) ? [{ value, key: null, parent: null, depth: 0 }] : [];
  for (let entry = pending.pop(); entry !== undefined; entry = pending.pop()) {
    const { value: item, depth } = entry;
    if (typeof item === 'string') {
      const nulAllowed = freeTextDepths.has(depth) && freeText.some((pattern) => matches(pattern, pathOf(entry as Pending)));
      const problem = textProblem(item, nulAllowed);
      if (problem !== null) refuse(entry, problem);
      continue;
    }
    if (depth >= MAX_JSON_DEPTH) {
      throw new DomainError('invalid_body', `body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    if (Array.isArray(item)) {
      for (let index = 0; index < item.length; index += 1) {
        if (needsCheck(item[index])) pending.push({ value: item[index], key: index, parent: entry, depth: depth + 1 });
      }
      continue;
    }
    for (const key of Object.keys(item as object)) {
      const problem = textProblem(key);
      if (problem !== null) refuse(entry, problem, 'a field name in ');
      const element = (item as Record<string, unknown>)[key];
      if (needsCheck(element)) pending.push({ value: element, key, parent: entry, depth: depth + 1 });
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
