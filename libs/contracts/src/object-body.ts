import type { z } from 'zod';
import { DomainError } from './errors';

/**
 * A JSON object body through its zod schema: 400 `invalid_body` naming the first broken rule (see `describeIssue`).
 * Shared by the intern, chat, invoke, answer, vault and egress policy routes.
 */
export function parseObjectBody<T>(schema: z.ZodType<T>, value: unknown): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_body', 'body must be a JSON object');
  }
  const result = schema.safeParse(value);
  if (!result.success) throw new DomainError('invalid_body', describeIssue(result.error));
  return result.data;
}

/**
 * The first broken rule as the error message says it: `<path>: <rule>` (path segments joined with dots),
 * `unknown field: <names>` for a strict schema's extra keys, the bare rule at the top level. (Analytics queries
 * name nested paths their own way: `describeQueryIssue`.)
 */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid body';
  if (issue.code === 'unrecognized_keys') return `unknown field: ${issue.keys.join(', ')}`;
  const path = issue.path.join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}
