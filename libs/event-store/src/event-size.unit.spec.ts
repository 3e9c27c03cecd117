import { EventTooLargeError, MIN_CUTTABLE_BYTES, storableEventData, truncationMarker } from './event-size';

const METADATA = JSON.stringify({ correlation_id: 'c', causation_id: null, actor: 'spec' });
const LIMIT = 4096;

function bytesOf(dataJson: string): number {
  return Buffer.byteLength(dataJson) + Buffer.byteLength(METADATA);
}

describe('storableEventData', () => {
  it('keeps an event that fits as it is (NUL replaced, as storable-json does)', () => {
    const data = { runId: 'r1', output: 'a\u0000b' };
    expect(JSON.parse(storableEventData('ToolFinished', data, METADATA, LIMIT))).toEqual({ runId: 'r1', output: 'a\uFFFDb' });
  });

  it('cuts the longest string, keeping its beginning and a marker saying how much is gone', () => {
    const output = 'x'.repeat(10_000);
    const data = { runId: 'r1', output, note: 'y'.repeat(2_000) };
    const json = storableEventData('ToolFinished', data, METADATA, LIMIT);
    const stored = JSON.parse(json) as typeof data;

    expect(bytesOf(json)).toBeLessThanOrEqual(LIMIT);
    expect(stored.runId).toBe('r1');
    expect(stored.note).toBe(data.note);
    const [, kept = '', removed = ''] = /^(x*)… \[truncated (\d+) bytes\]$/.exec(stored.output) ?? [];
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length + Number(removed)).toBe(output.length);
    // Only as much as needed is cut.
    expect(bytesOf(json)).toBeGreaterThan(LIMIT - 64);
  });

  it('goes on to the next longest string, in nested objects and arrays, when one is not enough', () => {
    const data = { turns: [{ text: 'a'.repeat(3_000) }, { text: 'b'.repeat(3_000) }], answer: 'c'.repeat(3_000) };
    const json = storableEventData('Big', data, METADATA, LIMIT);
    const stored = JSON.parse(json) as typeof data;

    expect(bytesOf(json)).toBeLessThanOrEqual(LIMIT);
    const texts = [stored.turns[0].text, stored.turns[1].text, stored.answer];
    expect(texts.filter((text) => text.includes('… [truncated ')).length).toBeGreaterThanOrEqual(2);
    expect(texts.every((text) => /^(a*|b*|c*)(… \[truncated \d+ bytes\])?$/.test(text))).toBe(true);
  });

  it('counts bytes, not characters, and never splits a character', () => {
    const data = { answer: 'é€😀'.repeat(2_000) };
    const json = storableEventData('Answer', data, METADATA, LIMIT);
    const { answer } = JSON.parse(json) as typeof data;

    expect(bytesOf(json)).toBeLessThanOrEqual(LIMIT);
    expect(answer).not.toContain('\uFFFD');
    const kept = answer.slice(0, answer.indexOf('… [truncated '));
    expect('é€😀'.repeat(2_000).startsWith(kept)).toBe(true);
    expect(answer.endsWith(truncationMarker(Buffer.byteLength(data.answer) - Buffer.byteLength(kept)))).toBe(true);
  });

  it('accounts for JSON escapes (a string of quotes takes twice its length)', () => {
    const json = storableEventData('Quotes', { output: '"'.repeat(5_000) }, METADATA, LIMIT);
    expect(bytesOf(json)).toBeLessThanOrEqual(LIMIT);
  });

  it('refuses an event that has no long string to cut', () => {
    const small = 'z'.repeat(MIN_CUTTABLE_BYTES);
    const data = { items: Array.from({ length: 10 }, () => small) };
    expect(() => storableEventData('Many', data, METADATA, LIMIT)).toThrow(EventTooLargeError);
    expect(() => storableEventData('Many', data, METADATA, LIMIT)).toThrow(/event Many is \d+ bytes .* over the limit of 4096 bytes \(MAX_EVENT_BYTES\)/);
  });
});
