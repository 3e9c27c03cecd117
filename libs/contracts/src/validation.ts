/**
 * Request validation for every route, one approach (zod), kept framework-free so the gateway and the
 * services agree. Each parser returns a typed value or throws DomainError('invalid_body').
 */
import { z } from 'zod';
import { DomainError } from './errors';
import { describeIssue } from './object-body';
import { assertRequestText, type FreeTextPaths } from './request-text';
import {
  CreateInternBody,
  DeleteInternBody,
  INTERN_STATUSES,
  InternStatus,
  LIST_DEFAULT_LIMIT,
  LIST_MAX_LIMIT,
  LIST_MAX_STATUS_ITEMS,
  UpdateInternBody,
} from './intern';
import { MAX_SESSION_ID_CHARS } from './chat';
import { RUN_STATUSES, type RunListQuery } from './runs';
import { EGRESS_LOG_DEFAULT_LIMIT, EGRESS_LOG_MAX_LIMIT, type EgressLogQuery } from './egress-service';
import { VAULT_LIST_DEFAULT_LIMIT, VAULT_LIST_MAX_LIMIT, VAULT_LIST_MAX_OFFSET, type VaultListQuery } from './vault';

export const NAME_PATTERN = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
export const MODEL_PATTERN = /^[A-Za-z0-9~._:@+-]+\/[A-Za-z0-9~._:@+-]+$/;
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const MAX_BODY_BYTES = 1048576;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}

const name = z
  .string()
  .min(2, 'name must be 2-40 characters')
  .max(40, 'name must be 2-40 characters')
  .regex(NAME_PATTERN, 'name must be lowercase letters, digits and single hyphens, starting with a letter');
const description = z.string().max(2000, 'description must be at most 2000 characters').nullable();
const instructions = z.string().max(100000, 'instructions must be at most 100000 characters').nullable();
const model = z
  .string()
  .max(200, 'model must be at most 200 characters')
  .regex(MODEL_PATTERN, 'model must look like "<author>/<model>"')
  .nullable();
const uuid = z.string().regex(UUID_PATTERN, 'must be a uuid');

/** Free text of an intern that may hold NUL (stored with U+FFFD in its place, as every event's text). */
export const INTERN_FREE_TEXT: FreeTextPaths = ['description', 'instructions'];

export const createInternSchema = z.strictObject({
  name,
  description: description.optional(),
  instructions: instructions.optional(),
  model: model.optional(),
  provision: z.boolean().optional(),
  vault_id: uuid.optional(),
  workspace_id: uuid.optional(),
});

export const updateInternSchema = z.strictObject({
  name: name.optional(),
  description: description.optional(),
  instructions: instructions.optional(),
  model: model.optional(),
});

export const deleteInternSchema = z.strictObject({ acknowledge_workspace_loss: z.boolean().optional() });

function parseWith<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new DomainError('invalid_body', describeIssue(result.error));
  return result.data;
}

export function parseCreateInternBody(value: unknown): CreateInternBody {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_body', 'body must be a JSON object');
  }
  return parseWith(createInternSchema, value);
}

export function parseUpdateInternBody(value: unknown): UpdateInternBody {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_body', 'body must be a JSON object');
  }
  return parseWith(updateInternSchema, value);
}

/** DELETE body: optional; `{}` or `{"acknowledge_workspace_loss": bool}`. */
export function parseDeleteInternBody(value: unknown): DeleteInternBody {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_body', 'body must be a JSON object');
  }
  return parseWith(deleteInternSchema, value);
}

/** Provision and suspend take no body: nothing, or `{}`, whatever the content type. */
export function assertEmptyCommandBody(raw: Buffer | string | undefined): void {
  if (raw === undefined) return;
  const text = (typeof raw === 'string' ? raw : raw.toString('utf8')).trim();
  if (text === '') return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new DomainError('invalid_body', 'this route takes no body (an empty body or {} is accepted)');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.keys(parsed).length > 0) {
    throw new DomainError('invalid_body', 'this route takes no body (an empty body or {} is accepted)');
  }
}

export const IDEMPOTENCY_KEY_MAX = 255;

export function parseIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.length < 1 || value.length > IDEMPOTENCY_KEY_MAX) {
    throw new DomainError('invalid_body', `Idempotency-Key must be 1-${IDEMPOTENCY_KEY_MAX} characters`);
  }
  // Stored with the command's result; the HTTP parser already refuses NUL in a header, this keeps it so.
  assertRequestText('Idempotency-Key', value);
  return value;
}

export interface ListQuery {
  limit: number;
  statuses: InternStatus[] | null;
  startingAfter: string | null;
  workspaceId: string | null;
}

type QueryParameters = Record<string, string | string[] | undefined>;

/**
 * A query parameter given at most once (CONTRACT section 4: a repeated one is 400), as text a service can take
 * (a percent-encoded NUL, `%00`, decodes to one: 400 naming the parameter).
 */
function singleParameter(query: QueryParameters, key: string): string | undefined {
  const value = query[key];
  if (Array.isArray(value)) throw new DomainError('invalid_body', `${key} may be given once`);
  if (value !== undefined) assertRequestText(key, value);
  return value;
}

/** The list rules of CONTRACT section 4 (limit, a status filter of `known` statuses, starting_after) of any list. */
function parsePage<S extends string>(query: QueryParameters, known: readonly S[]): { limit: number; statuses: S[] | null; startingAfter: string | null } {
  let limit = LIST_DEFAULT_LIMIT;
  const rawLimit = singleParameter(query, 'limit');
  if (rawLimit !== undefined) {
    if (!/^\d+$/.test(rawLimit)) throw new DomainError('invalid_body', `limit must be an integer 1-${LIST_MAX_LIMIT}`);
    limit = Number(rawLimit);
    if (limit < 1 || limit > LIST_MAX_LIMIT) {
      throw new DomainError('invalid_body', `limit must be an integer 1-${LIST_MAX_LIMIT}`);
    }
  }

  let statuses: S[] | null = null;
  const rawStatus = singleParameter(query, 'status');
  if (rawStatus !== undefined) {
    const items = rawStatus.split(',');
    if (items.length > LIST_MAX_STATUS_ITEMS) {
      throw new DomainError('invalid_body', `status takes at most ${LIST_MAX_STATUS_ITEMS} items`);
    }
    const knownSet: ReadonlySet<string> = new Set(known);
    for (const item of items) {
      if (!knownSet.has(item)) throw new DomainError('invalid_body', `unknown status: ${JSON.stringify(item)}`);
    }
    statuses = [...new Set(items)] as S[];
  }

  return { limit, statuses, startingAfter: startingAfterOf(query) };
}

/** A list's `starting_after`: the cursor as given (the service that issued it judges it), or null when absent. */
function startingAfterOf(query: QueryParameters): string | null {
  const startingAfter = singleParameter(query, 'starting_after') ?? null;
  if (startingAfter !== null && startingAfter.length === 0) {
    throw new DomainError('invalid_body', 'starting_after is not a valid cursor');
  }
  return startingAfter;
}

/** Parses GET /interns query parameters (already percent-decoded). Unknown parameters are ignored. */
export function parseListQuery(query: QueryParameters): ListQuery {
  const page = parsePage(query, INTERN_STATUSES);
  const workspaceId = singleParameter(query, 'workspace_id') ?? null;
  if (workspaceId !== null && !isUuid(workspaceId)) {
    throw new DomainError('invalid_body', 'workspace_id must be a uuid');
  }
  return { ...page, workspaceId };
}

/** Parses GET /interns/{id}/runs query parameters (CONTRACT section 12). Unknown parameters are ignored. */
export function parseRunListQuery(query: QueryParameters): RunListQuery {
  const page = parsePage(query, RUN_STATUSES);
  const sessionId = singleParameter(query, 'session_id') ?? null;
  if (sessionId !== null && (sessionId.length < 1 || sessionId.length > MAX_SESSION_ID_CHARS)) {
    throw new DomainError('invalid_body', `session_id must be 1-${MAX_SESSION_ID_CHARS} characters`);
  }
  return { ...page, sessionId };
}

/** An integer query parameter within [min, max], or `fallback` when absent (400 naming the range otherwise). */
function boundedInteger(query: QueryParameters, key: string, min: number, max: number, fallback: number): number {
  const raw = singleParameter(query, key);
  if (raw === undefined) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) throw new DomainError('invalid_body', `${key} must be an integer ${min}-${max}`);
  return value;
}

/** Parses GET /interns/{id}/egress/log query parameters (interface section 19). Unknown parameters are ignored. */
export function parseEgressLogQuery(query: QueryParameters): EgressLogQuery {
  return {
    limit: boundedInteger(query, 'limit', 1, EGRESS_LOG_MAX_LIMIT, EGRESS_LOG_DEFAULT_LIMIT),
    startingAfter: startingAfterOf(query),
  };
}

/** Parses GET /vault/secrets (and an intern's) query parameters (interface section 18). Unknown parameters are ignored. */
export function parseVaultListQuery(query: QueryParameters): VaultListQuery {
  return {
    limit: boundedInteger(query, 'limit', 1, VAULT_LIST_MAX_LIMIT, VAULT_LIST_DEFAULT_LIMIT),
    offset: boundedInteger(query, 'offset', 0, VAULT_LIST_MAX_OFFSET, 0),
  };
}
