/**
 * Small builders for the JSON Schema (2020-12, the OpenAPI 3.1 dialect) the API document is written in, so
 * the document reads as data and the recurring shapes (nullable, strict object, $ref) are spelled once.
 */
import { z } from 'zod';
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
