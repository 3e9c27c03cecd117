import type { z } from 'zod';
import { DomainError } from './errors';

/**
 * A JSON object body through its zod schema: 400 `invalid_body` naming the first broken rule (`<path>: <rule>`, or
 * `unknown field: <names>` for a strict schema's extra keys). Shared by the vault's and the egress policy's routes.
 */
export function parseObjectBody<T>(schema: z.ZodType<T>, value: unknown): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_body', 'body must be a JSON object');
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue?.code === 'unrecognized_keys') throw new DomainError('invalid_body', `unknown field: ${issue.keys.join(', ')}`);
  const path = issue?.path.join('.') ?? '';
  throw new DomainError('invalid_body', issue === undefined ? 'invalid body' : path === '' ? issue.message : `${path}: ${issue.message}`);
}
