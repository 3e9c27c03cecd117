import { DEFAULT_MAX_EVENT_BYTES } from '@interns/contracts';
import { toStorableJson } from './storable-json';

export { DEFAULT_MAX_EVENT_BYTES };

/** Strings up to this size (ids, names, short text) are never cut: cutting them would save little and break meaning. */
export const MIN_CUTTABLE_BYTES = 1024;

/** An event whose JSON is over `MAX_EVENT_BYTES` even with every long string cut: refused, nothing is stored. */
export class EventTooLargeError extends Error {
  constructor(
    readonly eventType: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`event ${eventType} is ${bytes} bytes with its long text cut, over the limit of ${limit} bytes (MAX_EVENT_BYTES)`);
    this.name = 'EventTooLargeError';
  }
}

/** What replaces the end of a cut string: visible to whoever reads it, and says how much is gone. */
export function truncationMarker(removedBytes: number): string {
  return `… [truncated ${removedBytes} bytes]`;
}

interface CuttableText {
  holder: Record<string, unknown> | unknown[];
  key: string | number;
  original: Buffer;
  /** Bytes of `original` still kept; the string is the kept prefix plus a marker once below the whole. */
  kept: number;
  /** Bytes of the string's current JSON form (quotes and escapes included). */
  jsonBytes: number;
}

/**
 * The storable JSON (see storable-json.ts) of an event's `data`, cut so that it and `metadataJson` together take
 * at most `maxBytes`: the longest string is cut first, keeping its beginning and ending with `truncationMarker`,
 * until the event fits. Throws `EventTooLargeError` when cutting every long string is not enough.
 */
export function storableEventData(eventType: string, data: unknown, metadataJson: string, maxBytes: number): string {
  const dataJson = toStorableJson(data);
  const budget = maxBytes - Buffer.byteLength(metadataJson);
  let size = Buffer.byteLength(dataJson);
  if (size <= budget) return dataJson;

  const tree = { data: JSON.parse(dataJson) as unknown };
  const texts = cuttableTexts(tree);
  while (size > budget) {
    const longest = texts.reduce<CuttableText | null>((max, text) => (text.kept > 0 && (!max || text.jsonBytes > max.jsonBytes) ? text : max), null);
    if (!longest) throw new EventTooLargeError(eventType, size + maxBytes - budget, maxBytes);
    // Every kept byte removed takes at least one JSON byte with it; the marker's own bytes are paid for too.
    const markerBytes = Buffer.byteLength(truncationMarker(longest.original.length));
    cut(longest, Math.max(0, longest.kept - (size - budget) - markerBytes));
    size = Buffer.byteLength(JSON.stringify(tree.data));
  }
  return JSON.stringify(tree.data);
}

function cut(text: CuttableText, keep: number): void {
  let end = keep;
  // Never split a UTF-8 sequence: step back over continuation bytes (10xxxxxx).
  while (end > 0 && end < text.original.length && (text.original[end] & 0xc0) === 0x80) end -= 1;
  text.kept = end;
  const value = text.original.subarray(0, end).toString('utf8') + truncationMarker(text.original.length - end);
  (text.holder as Record<string | number, unknown>)[text.key] = value;
  text.jsonBytes = Buffer.byteLength(JSON.stringify(value));
}

/** The long strings under `root`, each with the object or array holding it, so it can be replaced in place. */
function cuttableTexts(root: Record<string, unknown>): CuttableText[] {
  const found: CuttableText[] = [];
  const visit = (holder: Record<string, unknown> | unknown[], key: string | number, value: unknown): void => {
    if (typeof value === 'string') {
      const original = Buffer.from(value, 'utf8');
      if (original.length > MIN_CUTTABLE_BYTES) {
        found.push({ holder, key, original, kept: original.length, jsonBytes: Buffer.byteLength(JSON.stringify(value)) });
      }
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => visit(value, index, item));
    } else if (typeof value === 'object' && value !== null) {
      const record = value as Record<string, unknown>;
      for (const [childKey, item] of Object.entries(record)) visit(record, childKey, item);
    }
  };
  for (const [key, value] of Object.entries(root)) visit(root, key, value);
  return found;
}
