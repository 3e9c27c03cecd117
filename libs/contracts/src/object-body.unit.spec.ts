import { z } from 'zod';
import { DomainError } from './errors';
import { describeIssue, parseObjectBody } from './object-body';

const schema = z.strictObject({ name: z.string().min(1, 'name must not be empty'), tags: z.array(z.string()).optional() });

function issueOf(value: unknown): string {
  const result = schema.safeParse(value);
  if (result.success) throw new Error('expected the value to break a rule');
  return describeIssue(result.error);
}

function refusal(value: unknown): { reason: string; message: string } {
  try {
    parseObjectBody(schema, value);
  } catch (error) {
    if (error instanceof DomainError) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('describeIssue', () => {
  it('names the path of the first broken rule, segments joined with dots', () => {
    expect(issueOf({ name: '' })).toBe('name: name must not be empty');
    expect(issueOf({ name: 'a', tags: ['x', 7] })).toMatch(/^tags\.1: /);
  });

  it('names the extra keys of a strict schema', () => {
    expect(issueOf({ name: 'a', colour: 'red', size: 1 })).toBe('unknown field: colour, size');
  });

  it('gives the bare rule when the whole value is wrong', () => {
    const result = z.string().safeParse(3);
    expect(result.success).toBe(false);
    if (!result.success) expect(describeIssue(result.error)).toBe(result.error.issues[0]?.message);
  });

  it('says "invalid body" for an error without issues', () => {
    expect(describeIssue(new z.ZodError([]))).toBe('invalid body');
  });
});

describe('parseObjectBody', () => {
  it('returns the parsed body', () => {
    expect(parseObjectBody(schema, { name: 'a' })).toEqual({ name: 'a' });
  });

  it('refuses anything but a JSON object', () => {
    for (const value of [null, [], 'text', 3]) {
      expect(refusal(value)).toEqual({ reason: 'invalid_body', message: 'body must be a JSON object' });
    }
  });

  it('refuses a broken rule with invalid_body and the described issue', () => {
    expect(refusal({ name: 'a', extra: true })).toEqual({ reason: 'invalid_body', message: 'unknown field: extra' });
  });
});
