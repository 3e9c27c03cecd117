/**
 * PostgreSQL's jsonb (and text) cannot hold U+0000, so one NUL in a prompt or in a tool's output would fail the
 * whole append. Every string of an event's data and metadata, keys included, has U+0000 replaced by U+FFFD (the
 * replacement character) before it is stored: the text keeps its length and shows where something unstorable
 * was, where stripping would silently join what the NUL separated.
 */
const NUL = '\u0000';
const REPLACEMENT = '\uFFFD';

/** `JSON.stringify` of a value bound for a jsonb column. */
export function toStorableJson(value: unknown): string {
  return JSON.stringify(value, replaceNul);
}

function withoutNul(text: string): string {
  return text.includes(NUL) ? text.replaceAll(NUL, REPLACEMENT) : text;
}

/** A JSON.stringify replacer: it sees every value (after `toJSON`) on the way down, so nothing escapes it. */
function replaceNul(_key: string, value: unknown): unknown {
  if (typeof value === 'string') return withoutNul(value);
  if (hasKeyWithNul(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [withoutNul(key), item]));
  }
  return value;
}

function hasKeyWithNul(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).some((key) => key.includes(NUL));
}
