/**
 * Small builders for the JSON Schema (2020-12, the OpenAPI 3.1 dialect) the API document is written in, so
 * the document reads as data and the recurring shapes (nullable, strict object, $ref, a list page, timestamps and
 * ids) are spelled once.
 */
import { z } from 'zod';
import { MAX_SESSION_ID_CHARS } from '../chat';
import { UUID_PATTERN } from '../validation';

export type JsonSchema = { [keyword: string]: unknown };

const COMPONENT_SCHEMAS = '#/components/schemas/';

/** A reference to a schema under `components.schemas`. */
export function ref(name: string): JsonSchema {
  return { $ref: `${COMPONENT_SCHEMAS}${name}` };
}

/** The value or explicit `null` (CONTRACT section 3: nullable keys are present as `null`, never absent). */
export function nullable(schema: JsonSchema): JsonSchema {
  return { anyOf: [schema, { type: 'null' }] };
}

/**
 * An object with exactly these keys: every key in `required` must be present, none beyond `properties` may
 * be. Clients of this interface validate strictly, so the document says so too.
 */
export function strictObject(properties: Record<string, JsonSchema>, required: string[] = Object.keys(properties)): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

export const UUID_SCHEMA: JsonSchema = { type: 'string', format: 'uuid' };
/** ISO 8601 UTC with milliseconds and `Z` (CONTRACT section 3). */
export const TIMESTAMP: JsonSchema = { type: 'string', format: 'date-time', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' };
export const NON_EMPTY_STRING: JsonSchema = { type: 'string', minLength: 1 };
/** A chat or invoke session id (CONTRACT section 6: 1-256 characters). */
export const SESSION_ID: JsonSchema = { type: 'string', minLength: 1, maxLength: MAX_SESSION_ID_CHARS };

/**
 * A page of a list (CONTRACT sections 3 and 4): `data`, `has_more`, and `next_cursor` present exactly when
 * `has_more` is true (never `null`).
 */
export function listPage(items: JsonSchema, description: string): JsonSchema {
  return {
    type: 'object',
    properties: {
      data: { type: 'array', items },
      has_more: { type: 'boolean' },
      next_cursor: { ...NON_EMPTY_STRING, description: 'Pass as `starting_after` for the next page; present only when `has_more` is true.' },
    },
    required: ['data', 'has_more'],
    additionalProperties: false,
    // The branches name the key they require (or forbid, as `false`) beside their parent's declaration, so a
    // linter that reads a branch alone (redocly's no-required-schema-properties-undefined) finds it declared.
    if: { type: 'object', properties: { has_more: { const: true } } },
    then: { type: 'object', properties: { next_cursor: NON_EMPTY_STRING }, required: ['next_cursor'] },
    else: { type: 'object', properties: { next_cursor: false } },
    description,
  };
}

/**
 * The JSON Schema of a request body straight from the zod schema the gateway parses it with, so the document
 * cannot drift from the rules. Two adjustments: no `$schema` (the document's dialect applies), and the uuid
 * pattern (case-insensitive in code, a flag JSON Schema patterns cannot carry) becomes `format: uuid`.
 */
export function requestSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _dialect, ...generated } = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12' });
  return withUuidFormat(generated) as JsonSchema;
}

function withUuidFormat(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withUuidFormat);
  if (typeof node !== 'object' || node === null) return node;
  const entries = Object.entries(node).map(([key, value]) => [key, withUuidFormat(value)] as const);
  const copy: JsonSchema = Object.fromEntries(entries);
  if (copy.pattern === UUID_PATTERN.source) {
    delete copy.pattern;
    copy.format = 'uuid';
  }
  return copy;
}
