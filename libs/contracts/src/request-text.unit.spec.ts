import { DomainError } from './errors';
import { assertRequestText, MAX_JSON_DEPTH, parseRequestJson } from './request-text';
import { parseIdempotencyKey, parseRunListQuery } from './validation';

function refusal(action: () => unknown): { reason: string; message: string } | null {
  try {
    action();
    return null;
  } catch (error) {
    if (error instanceof DomainError) return { reason: error.reason, message: error.message };
    throw error;
  }
}

function nested(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

describe('parseRequestJson', () => {
  it('returns the parsed value of clean JSON, NUL allowed only where the route names free text', () => {
    expect(parseRequestJson('{"a":"x","b":[1,{"c":null}]}')).toEqual({ a: 'x', b: [1, { c: null }] });
    expect(parseRequestJson('{"input":"a\\u0000b"}', ['input'])).toEqual({ input: 'a\u0000b' });
    expect(parseRequestJson('{"messages":[{"content":[{"text":"\\u0000"}]}]}', ['messages.*.content.*.text'])).toEqual({
      messages: [{ content: [{ text: '\u0000' }] }],
    });
  });

  it('keeps well-formed surrogate pairs (emoji)', () => {
    expect(parseRequestJson('{"a":"\\ud83d\\ude00"}')).toEqual({ a: '😀' });
  });

  it.each([
    ['{"instructions":"\\udfff"}', 'instructions is not valid Unicode (it holds a lone surrogate)'],
    ['{"input":"x\\ud800y"}', 'input is not valid Unicode (it holds a lone surrogate)'],
    ['{"messages":[{"content":"\\udfff"}]}', 'messages.0.content is not valid Unicode (it holds a lone surrogate)'],
    ['{"a":{"\\ud800":1}}', 'a field name in a is not valid Unicode (it holds a lone surrogate)'],
    ['"\\udc00"', 'body is not valid Unicode (it holds a lone surrogate)'],
  ])('refuses a lone surrogate, naming the field: %s', (text, message) => {
    expect(refusal(() => parseRequestJson(text, ['input', 'instructions', 'messages.*.content']))).toEqual({ reason: 'invalid_body', message });
  });

  it.each([
    ['{"description":"a\\u0000b"}', [], 'description must not contain NUL characters'],
    ['{"filters":[{"value":"a\\u0000b"}]}', [], 'filters.0.value must not contain NUL characters'],
    ['{"session_id":"a\\u0000","input":"ok"}', ['input'], 'session_id must not contain NUL characters'],
    ['{"input":{"nested":"\\u0000"}}', ['input'], 'input.nested must not contain NUL characters'],
    ['{"k\\u0000":1}', ['*'], 'a field name in body must not contain NUL characters'],
  ])('refuses NUL outside free text: %s', (text, freeText, message) => {
    expect(refusal(() => parseRequestJson(text, freeText as string[]))).toEqual({ reason: 'invalid_body', message });
  });

  it(`takes ${MAX_JSON_DEPTH} levels of nesting and refuses one more`, () => {
    expect(refusal(() => parseRequestJson(nested(MAX_JSON_DEPTH)))).toBeNull();
    expect(refusal(() => parseRequestJson(nested(MAX_JSON_DEPTH + 1)))).toEqual({
      reason: 'invalid_body',
      message: `body is nested deeper than ${MAX_JSON_DEPTH} levels`,
    });
  });

  it('refuses 100 000 levels without overflowing the stack', () => {
    const deep = `{"metrics":${'['.repeat(100_000)}"runs"${']'.repeat(100_000)}}`;
    expect(refusal(() => parseRequestJson(deep))?.message).toBe(`body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it('checks a wide and deep body in memory in proportion to it (numbers are never queued)', () => {
    const zeros = Array.from({ length: 500_000 }, () => '0').join(',');
    const text = `${'['.repeat(62)}${zeros}${']'.repeat(62)}`;
    const before = process.memoryUsage().heapUsed;
    expect(refusal(() => parseRequestJson(text))).toBeNull();
    // The parsed array itself takes about 4 MB; a path per element would take hundreds.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('names the field of a refused string deep inside, and allows NUL only at a free-text path', () => {
    expect(refusal(() => parseRequestJson('{"a":[{"b":[0,"\\u0000"]}]}'))?.message).toBe('a.0.b.1 must not contain NUL characters');
    expect(refusal(() => parseRequestJson('{"a":[{"b":[0,"\\u0000"]}]}', ['a.*.b.*']))).toBeNull();
    expect(refusal(() => parseRequestJson('{"a":[{"b":[0,"\\u0000"]}]}', ['a.*.b']))?.message).toBe('a.0.b.1 must not contain NUL characters');
  });

  it('refuses what is not JSON', () => {
    expect(refusal(() => parseRequestJson('{"a":'))).toEqual({ reason: 'invalid_body', message: 'body is not valid JSON' });
  });
});

describe('request text outside bodies', () => {
  it('refuses a query value holding NUL, naming the parameter', () => {
    expect(refusal(() => parseRunListQuery({ session_id: 'a\u0000b' }))).toEqual({
      reason: 'invalid_body',
      message: 'session_id must not contain NUL characters',
    });
    expect(refusal(() => parseRunListQuery({ session_id: 'a-b' }))).toBeNull();
  });

  it('refuses an Idempotency-Key that is not storable text', () => {
    expect(refusal(() => parseIdempotencyKey('k\u0000'))?.message).toBe('Idempotency-Key must not contain NUL characters');
    expect(parseIdempotencyKey('key-1')).toBe('key-1');
  });

  it('names the field it refuses', () => {
    expect(refusal(() => assertRequestText('v', '\ud800'))?.message).toBe('v is not valid Unicode (it holds a lone surrogate)');
  });
});
