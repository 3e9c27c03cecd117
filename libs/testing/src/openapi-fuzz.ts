/**
 * Property-based fuzzing from an OpenAPI 3.1 document (plain JSON, as served): fast-check arbitraries of HTTP
 * requests for every operation the document holds, so a route added later is fuzzed without new test code.
 * Each request is one of:
 * - `valid`: built from the operation's parameters and request body schema (best-effort JSON Schema: `$ref`,
 *   `allOf`/`anyOf`/`oneOf`, `enum`/`const`, formats, patterns, bounds), with known-good values by name;
 * - `body` / `parameter`: a valid request with exactly one mutation (a value replaced by a hostile one, a field
 *   added or dropped, the whole body replaced, a path segment or query value garbled, a parameter repeated);
 * - `header`: a valid request with one hostile header (Content-Type, Authorization, Idempotency-Key, sizes, ...);
 * - `http`: a valid request broken at the HTTP layer (method, version, target shape, framing, raw bytes).
 * Requests are plain data, written byte-exact by `rawRequestBytes` (raw-http.ts); generation is deterministic
 * under fast-check's seed, and a request prints (in a counterexample) as a short readable summary.
 */
import fc from 'fast-check';
import type { RawHeader } from './raw-http';

// ---- the document ----

export type JsonSchemaNode = { [keyword: string]: unknown } | boolean;

/** The parts of an OpenAPI 3.1 document the fuzzer reads. */
export interface FuzzableDocument {
  servers?: { url: string }[];
  security?: Record<string, string[]>[];
  paths?: Record<string, Record<string, unknown>>;
  components?: Record<string, unknown>;
}

export interface FuzzParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  style?: string;
  explode?: boolean;
  schema: JsonSchemaNode;
}

export interface FuzzOperation {
  method: string;
  /** The path template as the document writes it, e.g. `/interns/{intern_id}`. */
  path: string;
  operationId?: string;
  /** The operation's security requirements (the document's when it has none); `[]`: public. */
  security: Record<string, string[]>[];
  parameters: FuzzParameter[];
  body: { required: boolean; mediaType: string; schema: JsonSchemaNode } | null;
}

/** A bearer credential the fuzzer may send, described as the document's security requirements name them. */
export interface FuzzCredential {
  token: string;
  /** The security scheme it belongs to (a key of `components.securitySchemes`). */
  scheme: string;
  /** The roles or scopes it holds. */
  roles: string[];
}

export interface FuzzContext {
  credentials: FuzzCredential[];
  /** Known-good values by name (path, query and header parameters, body properties), e.g. ids of existing resources. */
  knownValues?: Record<string, readonly unknown[]>;
  /** Known-good values for one operation, winning over `knownValues` (e.g. a disposable resource for destructive operations). */
  knownValuesFor?: (operation: FuzzOperation, name: string) => readonly unknown[] | undefined;
  /** Prefixed to every path; default the document's first server URL when it is a path. */
  basePath?: string;
  /** The Host header sent (default `localhost`). */
  host?: string;
}

export type FuzzKind = 'valid' | 'body' | 'parameter' | 'header' | 'http';

export interface FuzzRequest {
  /** `METHOD /template` of the operation it was built for. */
  operation: string;
  kind: FuzzKind;
  /** The one change made to a valid request (null for `valid`). */
  mutation: string | null;
  /** Broken at the HTTP layer on purpose (framing, sizes, bytes): the server's HTTP parser, not a route, answers. */
  httpLayer: boolean;
  method: string;
  /** The request target as written in the request line. */
  target: string;
  /** The request line's protocol version, `HTTP/1.1` unless broken on purpose. */
  version: string;
  headers: RawHeader[];
  /** JSON text (sent as UTF-8) or raw bytes; null: no body. */
  body: string | Buffer | null;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Resolves local `$ref`s (`#/...` JSON pointers), keeping a reference's sibling keywords. */
class RefResolver {
  constructor(private readonly document: FuzzableDocument) {}

  resolve<T>(node: T): T {
    let current: unknown = node;
    for (let hops = 0; hops < 32; hops += 1) {
      if (typeof current !== 'object' || current === null || typeof (current as { $ref?: unknown }).$ref !== 'string') return current as T;
      const { $ref, ...siblings } = current as { $ref: string };
      current = { ...(this.pointer($ref) as object), ...siblings };
    }
    throw new Error('fuzz: $ref chain too long');
  }

  private pointer(ref: string): unknown {
    if (!ref.startsWith('#/')) throw new Error(`fuzz: only local $refs are supported, got ${ref}`);
    let node: unknown = this.document;
    for (const token of ref.slice(2).split('/')) {
      const key = decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~');
      node = (node as Record<string, unknown> | undefined)?.[key];
    }
    if (node === undefined) throw new Error(`fuzz: unresolved $ref ${ref}`);
    return node;
  }
}

/** Every operation of the document, path-level parameters merged into the operation's. */
export function fuzzOperations(document: FuzzableDocument): FuzzOperation[] {
  const resolver = new RefResolver(document);
  const operations: FuzzOperation[] = [];
  for (const [path, rawItem] of Object.entries(document.paths ?? {})) {
    const item = resolver.resolve(rawItem);
    const shared = ((item.parameters as unknown[] | undefined) ?? []).map((parameter) => toParameter(resolver.resolve(parameter as Record<string, unknown>)));
    for (const method of HTTP_METHODS) {
      const operation = item[method] as Record<string, unknown> | undefined;
      if (operation === undefined) continue;
      const own = ((operation.parameters as unknown[] | undefined) ?? []).map((parameter) => toParameter(resolver.resolve(parameter as Record<string, unknown>)));
      const parameters = [...shared.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)), ...own];
      operations.push({
        method: method.toUpperCase(),
        path,
        operationId: operation.operationId as string | undefined,
        security: (operation.security as FuzzOperation['security'] | undefined) ?? document.security ?? [],
        parameters,
        body: requestBodyOf(resolver.resolve(operation.requestBody) as Record<string, unknown> | undefined),
      });
    }
  }
  return operations;
}

function toParameter(raw: Record<string, unknown>): FuzzParameter {
  return {
    name: String(raw.name),
    in: raw.in as FuzzParameter['in'],
    required: raw.required === true || raw.in === 'path',
    style: raw.style as string | undefined,
    explode: raw.explode as boolean | undefined,
    schema: (raw.schema as JsonSchemaNode | undefined) ?? true,
  };
}

/** The JSON media type when offered, else the first one. */
function requestBodyOf(raw: Record<string, unknown> | undefined): FuzzOperation['body'] {
  if (raw === undefined) return null;
  const content = (raw.content ?? {}) as Record<string, { schema?: JsonSchemaNode }>;
  const mediaType = Object.keys(content).find((type) => /json/i.test(type)) ?? Object.keys(content)[0];
  if (mediaType === undefined) return null;
  return { required: raw.required === true, mediaType, schema: content[mediaType].schema ?? true };
}

export const operationKey = (operation: FuzzOperation): string => `${operation.method} ${operation.path}`;

// ---- valid values from JSON Schema ----

type Schema = { [keyword: string]: unknown };
type Known = (name: string) => readonly unknown[] | undefined;

/** At most this many items in a generated array and characters in a free string: valid values stay small. */
const SMALL = 4;
const FREE_STRING_MAX = 40;
const MAX_SCHEMA_DEPTH = 8;

const ANY_JSON = fc.jsonValue({ maxDepth: 2 });

/**
 * A valid value for `schema` (best effort: `not`, `if`/`then`, uniqueness and `multipleOf` are not honoured).
 * `full`: objects carry every property they declare, so every field is there to be mutated.
 */
function valueOf(schema: unknown, resolver: RefResolver, known: Known, full: boolean, depth = 0): fc.Arbitrary<unknown> {
  if (schema === true || schema === undefined || depth > MAX_SCHEMA_DEPTH) return ANY_JSON;
  if (schema === false) return fc.constant(null);
  const node = resolver.resolve(schema as Schema);
  const next = (sub: unknown) => valueOf(sub, resolver, known, full, depth + 1);
  if ('const' in node) return fc.constant(node.const);
  if (Array.isArray(node.enum) && node.enum.length > 0) return fc.constantFrom(...(node.enum as unknown[]));
  if (Array.isArray(node.allOf)) return next(mergeAll(node, resolver));
  const alternatives = (node.oneOf ?? node.anyOf) as unknown[] | undefined;
  if (Array.isArray(alternatives) && alternatives.length > 0) return fc.oneof(...alternatives.map(next));
  const type = node.type ?? inferredType(node);
  if (Array.isArray(type)) return fc.oneof(...type.map((one) => next({ ...node, type: one })));
  switch (type) {
    case 'string':
      return stringOf(node);
    case 'integer':
      return integerOf(node);
    case 'number':
      return numberOf(node);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(next(node.items ?? true), {
        minLength: Number(node.minItems ?? 0),
        maxLength: Math.min(Number(node.maxItems ?? SMALL), Math.max(Number(node.minItems ?? 0), SMALL)),
      });
    case 'object':
      return objectOf(node, resolver, known, full, depth);
    default:
      return ANY_JSON;
  }
}

function inferredType(node: Schema): string | undefined {
  if ('properties' in node || 'additionalProperties' in node || 'maxProperties' in node) return 'object';
  if ('items' in node) return 'array';
  if ('pattern' in node || 'format' in node || 'minLength' in node || 'maxLength' in node) return 'string';
  if ('minimum' in node || 'maximum' in node) return 'number';
  return undefined;
}

/** `allOf` as one schema: properties and required lists merged, other keywords the last one's. */
function mergeAll(node: Schema, resolver: RefResolver): Schema {
  const { allOf, ...rest } = node;
  const parts = [rest, ...(allOf as unknown[]).map((part) => resolver.resolve(part as Schema))];
  return parts.reduce<Schema>(
    (merged, part) => ({
      ...merged,
      ...part,
      properties: { ...(merged.properties as object | undefined), ...(part.properties as object | undefined) },
      required: [...((merged.required as string[] | undefined) ?? []), ...((part.required as string[] | undefined) ?? [])],
    }),
    {},
  );
}

function objectOf(node: Schema, resolver: RefResolver, known: Known, full: boolean, depth: number): fc.Arbitrary<unknown> {
  if (node.maxProperties === 0) return fc.constant({});
  const properties = (node.properties ?? {}) as Record<string, unknown>;
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, schema] of Object.entries(properties)) {
    model[name] = withKnown(known(name), valueOf(schema, resolver, known, full, depth + 1));
  }
  const required = ((node.required as string[] | undefined) ?? []).filter((name) => name in model);
  return fc.record(model, { requiredKeys: full ? Object.keys(model) : required });
}

/** Known-good values (when the context has some for this name) most of the time, a schema-built one otherwise. */
function withKnown(values: readonly unknown[] | undefined, built: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  if (values === undefined || values.length === 0) return built;
  return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...values) }, { weight: 1, arbitrary: built });
}

function stringOf(node: Schema): fc.Arbitrary<string> {
  const minLength = Number(node.minLength ?? 0);
  const maxLength = node.maxLength === undefined ? undefined : Number(node.maxLength);
  const fits = (value: string) => value.length >= minLength && (maxLength === undefined || value.length <= maxLength);
  switch (node.format) {
    case 'uuid':
      return fc.uuid({ version: 4 });
    case 'date-time':
      return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((date) => date.toISOString());
    case 'email':
      return fc.emailAddress();
    case 'uri':
    case 'url':
      return fc.webUrl();
    default:
      break;
  }
  if (typeof node.pattern === 'string') {
    const pattern = patternOf(node.pattern);
    if (pattern !== null) return fc.stringMatching(pattern, { maxLength, size: 'small' }).filter(fits);
  }
  return fc.string({ unit: 'grapheme', minLength, maxLength: Math.min(maxLength ?? FREE_STRING_MAX, Math.max(minLength, FREE_STRING_MAX)) });
}

function patternOf(source: string): RegExp | null {
  try {
    return new RegExp(source);
  } catch {
    return null;
  }
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function boundsOf(node: Schema, fallback: number): { min: number; max: number } {
  const exclusiveMin = typeof node.exclusiveMinimum === 'number' ? node.exclusiveMinimum : undefined;
  const exclusiveMax = typeof node.exclusiveMaximum === 'number' ? node.exclusiveMaximum : undefined;
  const min = typeof node.minimum === 'number' ? node.minimum : exclusiveMin !== undefined ? exclusiveMin + 1 : -fallback;
  const max = typeof node.maximum === 'number' ? node.maximum : exclusiveMax !== undefined ? exclusiveMax - 1 : fallback;
  return { min, max };
}

/** fast-check integers are 32-bit: wider bounds get the bounds themselves besides a 32-bit value within them. */
function integerOf(node: Schema): fc.Arbitrary<number> {
  const { min, max } = boundsOf(node, 1_000_000);
  const inner = fc.integer({ min: Math.max(min, INT32_MIN), max: Math.min(max, INT32_MAX) });
  return min >= INT32_MIN && max <= INT32_MAX ? inner : fc.oneof(inner, fc.constantFrom(min, max));
}

function numberOf(node: Schema): fc.Arbitrary<number> {
  const { min, max } = boundsOf(node, 1_000_000);
  return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

// ---- hostile values ----

/** A hostile JSON value: raw JSON text (numbers beyond doubles and deep nesting cannot go through JSON.stringify), and what it is. */
export interface HostileJson {
  label: string;
  json: string;
}

/** Characters that break text handling: lone surrogates, NUL and controls, bidi and zero-width marks, noncharacters. */
const HOSTILE_CHARACTERS = [
  '\ud800', '\udfff', '\udbff', '\udc00', '\u0000', '\u0001', '\u001b', '\u007f', '\u0085', '\u00a0', '\u2028', '\u2029',
  '\u200b', '\u200d', '\u202e', '\ufeff', '\ufffd', '\ufffe', '\uffff', '\u{10ffff}', '\u{1f600}', '\u0301', '\u0130',
  '\r', '\n', '\t', '\\', '"', "'", '%', '/', '.', ',', ';', '&', '=', '?', '#', '$', '{', '}', '<', '>', '*',
];

/** Text with a meaning somewhere downstream: SQL, paths, templates, format strings, numbers as text, ids. */
const HOSTILE_TEXTS = [
  '\udfff', 'x\ud800y', 'a\u0000b', '\u0000', '', ' ', 'null', 'undefined', 'true', '0', '-1', 'NaN', 'Infinity', '1e309',
  "' OR '1'='1", "'; DROP TABLE interns; --", '" OR ""="', '\\', '%00', '%s%s%s%n', '{{7*7}}', '${7*7}', '<script>alert(1)</script>',
  '../../../../etc/passwd', '..\\..\\windows', 'file:///etc/passwd', '\r\nX-Injected: 1', '__proto__', 'constructor',
  '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF', '9'.repeat(400), '\u202eevil', 'A\u0301\u0301\u0301',
  '\ud83d', '\ude00', '\ud83d\ude00', '\ufeffbom', 'a\u2028b', '/say hi', '/sleep 200', '/ask what?', '/shell echo fuzz', '/unknown',
];

/** Text no store takes and few parsers expect: lone surrogates and NUL, alone or inside other text. */
const BREAKING_TEXTS = ['\udfff', 'x\ud800y', 'a\u0000b', '\u0000', '\ud800', 'a\udc00', '\ud83d', '\ude00x'];
const breakingText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...BREAKING_TEXTS),
  fc
    .tuple(fc.string({ unit: 'grapheme-ascii', maxLength: 6 }), fc.constantFrom('\ud800', '\udfff', '\u0000', '\udbff', '\udc00'), fc.string({ unit: 'grapheme-ascii', maxLength: 6 }))
    .map(([before, breaking, after]) => `${before}${breaking}${after}`),
);

/** A string that no valid request holds (breaking text, curated text, a random mix of hostile characters and plain ASCII). */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: breakingText },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_TEXTS) },
  {
    weight: 3,
    arbitrary: fc.string({
      unit: fc.oneof(fc.constantFrom(...HOSTILE_CHARACTERS), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 })),
      minLength: 1,
      maxLength: 12,
    }),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 16 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 16 }) },
);

/** Up to 1.1 MB: past every field limit and past the 1 MiB body limit. */
const longString = fc
  .tuple(fc.constantFrom('a', '\u00e9', '\u{1f600}', '\u0000', '\ud800', ' '), fc.oneof(fc.constantFrom(100_001, 1_100_000, 32_001), fc.integer({ min: 257, max: 1_100_000 })))
  .map(([unit, count]): HostileJson => ({ label: `${printable(unit)} x ${count}`, json: JSON.stringify(unit.repeat(count)) }));

const HUGE_NUMBERS = [
  '1e400', '-1e400', '1e-400', '-0', '0.0', '1.5', '-1', '0', '2147483648', '-2147483649', '9007199254740993',
  '123456789012345678901234567890', '1E5', '0.1e1', '1e1000000', '4294967296', '18446744073709551616', '1.7976931348623157e308',
];
const hugeNumber = fc.oneof(
  fc.constantFrom(...HUGE_NUMBERS).map((json): HostileJson => ({ label: `number ${json}`, json })),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value): HostileJson => ({ label: `number ${JSON.stringify(value)}`, json: JSON.stringify(value) })),
);

const WRONG_TYPES = ['null', 'true', 'false', '0', '""', '"0"', '[]', '{}', '[null]', '{"":0}', '[[]]', '["a"]', '{"a":{}}'];
const wrongType = fc.constantFrom(...WRONG_TYPES).map((json): HostileJson => ({ label: `wrong type ${json}`, json }));

/** Arrays or objects nested up to 10,000 levels (deeper than any JSON parser should be asked to recurse). */
export const deepNesting: fc.Arbitrary<HostileJson> = fc
  .tuple(fc.constantFrom('array', 'object'), fc.oneof(fc.constantFrom(10_000, 65, 1_000), fc.integer({ min: 2, max: 10_000 })))
  .map(([shape, depth]) => ({ label: `${shape} nested ${depth} deep`, json: nested(shape, depth) }));

export function nested(shape: 'array' | 'object', depth: number): string {
  return shape === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf', '__defineGetter__'];
const pollution = fc
  .constantFrom(...PROTOTYPE_KEYS)
  .map((key): HostileJson => ({ label: `object {"${key}":...}`, json: `{${JSON.stringify(key)}:{"polluted":true,"prototype":{"polluted":true}}}` }));

const hugeArray = fc
  .oneof(fc.constant(200_000), fc.integer({ min: 1_000, max: 200_000 }))
  .map((length): HostileJson => ({ label: `array of ${length} numbers`, json: `[${'0,'.repeat(length - 1)}0]` }));

/** What a hostile value is aimed at: a string, a number or boolean, an array or object, or any value. */
export type HostileAim = 'text' | 'scalar' | 'container' | 'any';

/** A hostile value for a field, and the kind of field it is aimed at (most of them break that kind of value). */
export const hostileJson: fc.Arbitrary<HostileJson & { aim: HostileAim }> = fc.oneof(
  { weight: 6, arbitrary: hostileString.map((text) => ({ aim: 'text' as const, label: `string ${printable(text)}`, json: JSON.stringify(text) })) },
  { weight: 1, arbitrary: longString.map((value) => ({ aim: 'text' as const, ...value })) },
  { weight: 2, arbitrary: hugeNumber.map((value) => ({ aim: 'scalar' as const, ...value })) },
  { weight: 2, arbitrary: deepNesting.map((value) => ({ aim: 'container' as const, ...value })) },
  { weight: 1, arbitrary: pollution.map((value) => ({ aim: 'container' as const, ...value })) },
  { weight: 1, arbitrary: hugeArray.map((value) => ({ aim: 'container' as const, ...value })) },
  { weight: 2, arbitrary: wrongType.map((value) => ({ aim: 'any' as const, ...value })) },
  { weight: 1, arbitrary: deepNesting.map((value) => ({ aim: 'any' as const, ...value })) },
);

/** Keys no schema declares: prototype keys, empty, control characters, lone surrogates, long. */
const unknownKey = fc.oneof(
  fc.constantFrom(...PROTOTYPE_KEYS, '', ' ', '\u0000', '\udfff', 'a'.repeat(1000), '$where', 'id', 'created_at', 'workspace_id', 'model'),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 }),
);

/** A whole body that is not the JSON asked for: other JSON types, broken JSON, bad encodings, nesting, size. */
interface HostileBody {
  label: string;
  body: string | Buffer;
}

const BROKEN_BODIES: [string, string | Buffer][] = [
  ['empty', ''],
  ['null', 'null'],
  ['a number', '0'],
  ['a string', '"text"'],
  ['an array', '[]'],
  ['an array of an object', '[{}]'],
  ['truncated', '{'],
  ['truncated member', '{"a":'],
  ['trailing comma', '{"a":1,}'],
  ['single quotes', "{'a':1}"],
  ['trailing garbage', '{"a":1}garbage'],
  ['two documents', '{"a":1}{"b":2}'],
  ['a comment', '/* c */{}'],
  ['NaN literal', '{"a":NaN}'],
  ['undefined literal', '{"a":undefined}'],
  ['a BOM', '\ufeff{}'],
  ['escaped lone surrogate key', '{"\\ud800":1}'],
  ['escaped NUL key', '{"\\u0000":1}'],
  ['invalid escape', '{"a":"\\x41"}'],
  ['raw control character', '{"a":"\u0001"}'],
  ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ['overlong UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d])],
  ['CESU-8 surrogate', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d])],
  ['UTF-16 encoded', Buffer.from('{"a":1}', 'utf16le')],
  ['20,000 keys', `{${Array.from({ length: 20_000 }, (_, index) => `"k${index}":0`).join(',')}}`],
  ['200,000 numbers', `[${'0,'.repeat(200_000)}0]`],
  ['1.1 MB string', `{"a":"${'x'.repeat(1_100_000)}"}`],
  ['whitespace only', ' \n\t '],
];

const hostileBody: fc.Arbitrary<HostileBody> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...BROKEN_BODIES).map(([label, body]) => ({ label, body })) },
  { weight: 1, arbitrary: deepNesting.map(({ label, json }) => ({ label, body: json })) },
);

// ---- hostile parameters and headers ----

/** Percent-encodes every byte but unreserved characters; a lone surrogate as its 3-byte generalized UTF-8 form. */
export function percentEncode(text: string): string {
  let encoded = '';
  for (const character of text) {
    if (/^[A-Za-z0-9\-._~]$/.test(character)) {
      encoded += character;
      continue;
    }
    const code = character.codePointAt(0) ?? 0;
    const bytes = code >= 0xd800 && code <= 0xdfff ? [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)] : [...Buffer.from(character, 'utf8')];
    encoded += bytes.map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  }
  return encoded;
}

/** A hostile path segment or query value, as written in the target. */
interface HostileParameter {
  label: string;
  text: string;
  httpLayer: boolean;
}

const GARBLED_SEGMENTS = [
  '%00', 'a%00b', '%', '%2', '%zz', '%ff', '%c3%28', '%ed%a0%80', '%ed%bf%bf', '%ef%bf%bf', '%2e%2e', '..', '.', '%2f', 'a%2fb', '%5c',
  '%20', '+', ';', ';x=1', '%3f', '%23', '*', '~', '%27%20OR%201%3D1', 'null', 'undefined', '-1', '0', 'NaN', '%7B%7D', '[]',
  '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF', '%u0000', '%C0%80', '&', '=', 'a=b&c',
];

/** Raw bytes the HTTP parser sees in the target: non-ASCII (0x80-0xff) and control characters. */
const RAW_TARGET_BYTES = ['\u00ff', '\u00e9', 'caf\u00e9', '\u0080', '\u00c3\u00a9', '\u0001', '\u007f', '\t', ' '];

const hostileParameter: fc.Arbitrary<HostileParameter> = fc.oneof(
  { weight: 3, arbitrary: breakingText.map((text) => ({ label: `encoded ${printable(text)}`, text: percentEncode(text), httpLayer: false })) },
  { weight: 4, arbitrary: fc.constantFrom(...GARBLED_SEGMENTS).map((text) => ({ label: `garbled ${text}`, text, httpLayer: false })) },
  { weight: 4, arbitrary: hostileString.map((text) => ({ label: `encoded ${printable(text)}`, text: percentEncode(text), httpLayer: false })) },
  { weight: 1, arbitrary: fc.constantFrom(...RAW_TARGET_BYTES).map((text) => ({ label: `raw bytes ${printable(text)}`, text, httpLayer: true })) },
  {
    weight: 1,
    arbitrary: fc.oneof(fc.constantFrom(20_000, 8_192, 100_000), fc.integer({ min: 101, max: 100_000 })).map((length) => ({
      label: `${length} characters`,
      text: 'a'.repeat(length),
      // Past the server's header limit (16 KiB with the rest of the head) the HTTP layer refuses the request line.
      httpLayer: length > 15_000,
    })),
  },
);

/** Header values: latin1 only (what goes on the wire byte per character); controls break the HTTP parser. */
const HOSTILE_HEADER_VALUES = [
  '', ' ', '\t', 'null', '0', '-1', '*', 'a\u00ffb', '\u00e9', '%00', "' OR 1=1 --", '../../etc/passwd', '<script>', 'a,b', 'a;b', '"',
  '1e309', '999999999999999999999', '00', ' 5', '5 ', '0x10', '+1', '1.0',
];
const hostileHeaderValue = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_HEADER_VALUES) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom('a', 'Z', '0', ' ', '\t', '\u0080', '\u00ff', '"', ',', ';', '=', '%', '\\'), minLength: 1, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.integer({ min: 256, max: 8_000 }).map((length) => 'v'.repeat(length)) },
);
/** Whether a header value holds a byte the HTTP parser refuses (a control character other than tab). */
function hasControl(value: string): boolean {
  return [...value].some((character) => {
    const code = character.charCodeAt(0);
    return (code < 0x20 && code !== 0x09) || code === 0x7f;
  });
}

const CONTENT_TYPES = [
  'text/plain', 'application/json; charset=latin1', 'application/json;charset=utf-16', 'APPLICATION/JSON', 'application/json, text/plain',
  '', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset="utf-8"', 'application/jsonx',
  ';;;', 'application/json\u00ff', 'application/*', '*/*', 'application/problem+json', 'application/json; boundary=', 'json',
];

const FAKE_JWTS = [
  'eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSIsInNjb3BlIjoiaW50ZXJucyJ9.',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl',
  'eyJhbGciOiJSUzI1NiIsImtpZCI6Ii4uLy4uL2V0Yy9wYXNzd2QifQ.e30.AAAA',
  'a.b.c',
  '....',
];

/** Authorization values; `<valid>` stands for a credential the operation takes. */
const AUTHORIZATIONS = [
  '', 'Bearer', 'Bearer ', 'Bearer  <valid>', 'bearer <valid>', 'BEARER <valid>', 'Basic dXNlcjpwYXNz', 'Token <valid>',
  'Bearer <valid> <valid>', 'Bearer <valid>x', 'Bearer x<valid>', 'Bearer \u00ff\u00fe', 'Bearer %00', "Bearer ' OR 1=1 --",
  'Bearer <valid>\t', 'Bearer null', ...FAKE_JWTS.map((jwt) => `Bearer ${jwt}`),
];

type HeaderMutation =
  | { kind: 'content-type'; value: string }
  | { kind: 'authorization'; value: string }
  | { kind: 'other-credential'; index: number }
  | { kind: 'no-authorization' }
  | { kind: 'duplicate-authorization' }
  | { kind: 'idempotency-key'; value: string }
  | { kind: 'header'; name: string; value: string }
  | { kind: 'long-header'; length: number }
  | { kind: 'many-headers'; count: number }
  | { kind: 'host'; value: string | null };

const EXTRA_HEADER_NAMES = [
  'X-Correlation-Id', 'X-Request-Id', 'X-Forwarded-For', 'X-Forwarded-Host', 'X-Forwarded-Proto', 'Forwarded', 'X-Real-IP', 'Accept',
  'Accept-Encoding', 'Accept-Language', 'Accept-Charset', 'Origin', 'Referer', 'Cookie', 'User-Agent', 'Last-Event-ID', 'If-None-Match',
  'If-Modified-Since', 'If-Match', 'Range', 'Traceparent', 'Tracestate', 'Baggage', 'X-HTTP-Method-Override', 'Prefer', 'Cache-Control',
  'Content-Encoding', 'Content-Language', 'Content-MD5', 'Digest', 'DNT', 'Max-Forwards', 'Pragma', 'Via', 'Warning', 'X-Fuzz',
  'Expect', 'Upgrade', 'TE', 'Trailer', 'Keep-Alive', 'Proxy-Authorization', 'Authorization-Fuzz',
];
const HOSTS = ['eu.localhost', 'localhost:99999', '', 'LOCALHOST', 'localhost.', '127.0.0.1', '[::1]', 'evil.example', 'a'.repeat(300), 'localhost, evil'];

const headerMutation: fc.Arbitrary<HeaderMutation> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES).map((value): HeaderMutation => ({ kind: 'content-type', value })) },
  { weight: 3, arbitrary: fc.constantFrom(...AUTHORIZATIONS).map((value): HeaderMutation => ({ kind: 'authorization', value })) },
  { weight: 1, arbitrary: fc.oneof(fc.constant('Bearer '), fc.constant('')).chain((prefix) => fc.integer({ min: 1000, max: 8000 }).map((length): HeaderMutation => ({ kind: 'authorization', value: `${prefix}${'x'.repeat(length)}` }))) },
  { weight: 2, arbitrary: fc.nat().map((index): HeaderMutation => ({ kind: 'other-credential', index })) },
  { weight: 1, arbitrary: fc.constant<HeaderMutation>({ kind: 'no-authorization' }) },
  { weight: 1, arbitrary: fc.constant<HeaderMutation>({ kind: 'duplicate-authorization' }) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(fc.constantFrom('', ' ', 'k'.repeat(255), 'k'.repeat(256), 'fuzz-key', 'a\tb', '\u00e9', '%00', "' OR 1=1"), hostileHeaderValue)
      .map((value): HeaderMutation => ({ kind: 'idempotency-key', value })),
  },
  { weight: 3, arbitrary: fc.record({ name: fc.constantFrom(...EXTRA_HEADER_NAMES), value: hostileHeaderValue }).map((header): HeaderMutation => ({ kind: 'header', ...header })) },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom(20_000, 16_000), fc.integer({ min: 1_000, max: 40_000 })).map((length): HeaderMutation => ({ kind: 'long-header', length })) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 2_500 }).map((count): HeaderMutation => ({ kind: 'many-headers', count })) },
  { weight: 1, arbitrary: fc.constantFrom<string | null>(...HOSTS, null).map((value): HeaderMutation => ({ kind: 'host', value })) },
);

type HttpMutation =
  | { kind: 'method'; method: string }
  | { kind: 'version'; version: string }
  | { kind: 'target'; shape: string }
  | { kind: 'long-query'; length: number }
  | { kind: 'framing'; shape: string }
  | { kind: 'raw-byte-in-path'; byte: string };

/** Methods the parser knows (answered by routing), and ones it does not (answered by the HTTP layer). */
const KNOWN_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'PURGE', 'LINK'];
const UNKNOWN_METHODS = ['FOO', 'get', 'G ET', 'GET\u00ff', 'X'.repeat(100)];
const VERSIONS = ['HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2', 'HTTP/9.9', 'HTTP/1', 'http/1.1', 'HTTP/1.1 x', 'HTTP/0.9', ''];
const TARGET_SHAPES = ['trailing slash', 'double slash', 'dot segment', 'dot-dot segment', 'upper case', 'absolute form', 'asterisk', 'no leading slash', 'empty query', 'ampersands', 'fragment', 'encoded slash', 'path parameter', 'encoded prefix'];
const FRAMINGS = ['length not a number', 'negative length', 'length and chunked', 'unknown coding', 'two lengths', 'chunked', 'bad chunk size', 'body on any method'];

const httpMutation: fc.Arbitrary<HttpMutation> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...KNOWN_METHODS, ...UNKNOWN_METHODS).map((method): HttpMutation => ({ kind: 'method', method })) },
  { weight: 1, arbitrary: fc.constantFrom(...VERSIONS).map((version): HttpMutation => ({ kind: 'version', version })) },
  { weight: 2, arbitrary: fc.constantFrom(...TARGET_SHAPES).map((shape): HttpMutation => ({ kind: 'target', shape })) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(20_000), fc.integer({ min: 1_000, max: 40_000 })).map((length): HttpMutation => ({ kind: 'long-query', length })) },
  { weight: 2, arbitrary: fc.constantFrom(...FRAMINGS).map((shape): HttpMutation => ({ kind: 'framing', shape })) },
  { weight: 1, arbitrary: fc.constantFrom(...RAW_TARGET_BYTES).map((byte): HttpMutation => ({ kind: 'raw-byte-in-path', byte })) },
);

// ---- requests ----

/** A valid request before it is written: each part can be mutated on its own. */
interface Draft {
  /** Encoded path parameter values by name. */
  pathValues: Record<string, string>;
  /** Encoded query parameters in order; a null value is written without `=`. */
  query: [string, string | null][];
  /** Header parameters (name as documented). */
  parameterHeaders: RawHeader[];
  /** The credential sent, null for none. */
  token: string | null;
  /** The Host header, null for none. */
  host: string | null;
  /** The body as a JSON value (undefined: none), and its media type. */
  body: unknown;
  contentType: string | null;
}

interface Built {
  draft: Draft;
  /** The credentials the operation takes. */
  credentials: string[];
}

/** What one mutation did to a draft: its description, whether it breaks the HTTP layer, headers it adds. */
interface Edited {
  label: string;
  httpLayer: boolean;
  extra: RawHeader[];
}

/** The credentials a requirement list admits: per requirement, those holding all its roles, else those holding any. */
function credentialsFor(operation: FuzzOperation, credentials: FuzzCredential[]): string[] {
  const admitted = new Set<string>();
  for (const requirement of operation.security) {
    for (const [scheme, roles] of Object.entries(requirement)) {
      const ofScheme = credentials.filter((credential) => credential.scheme === scheme);
      const holdingAll = ofScheme.filter((credential) => roles.every((role) => credential.roles.includes(role)));
      const holdingAny = ofScheme.filter((credential) => roles.length === 0 || roles.some((role) => credential.roles.includes(role)));
      for (const credential of holdingAll.length > 0 ? holdingAll : holdingAny) admitted.add(credential.token);
    }
  }
  return [...admitted];
}

/** A query parameter as written: an array comma-separated (`explode: false`) or repeated (form style's default). */
function queryEntries(parameter: FuzzParameter, value: unknown): [string, string][] {
  const text = (item: unknown) => percentEncode(typeof item === 'string' ? item : JSON.stringify(item));
  if (!Array.isArray(value)) return [[parameter.name, text(value)]];
  if (parameter.explode === false) return [[parameter.name, value.map(text).join(',')]];
  return value.map((item): [string, string] => [parameter.name, text(item)]);
}

/** A header value as it can go on the wire (latin1); anything wider becomes its percent-encoding. */
function headerText(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /^[\u0020-\u007e\u0080-\u00ff\t]*$/.test(text) ? text : percentEncode(text);
}

/** A draft of its own: mutations change it, and fast-check hands the same generated draft to every shrink attempt. */
function copyOf(draft: Draft): Draft {
  return {
    ...draft,
    pathValues: { ...draft.pathValues },
    query: draft.query.map(([name, value]) => [name, value]),
    parameterHeaders: draft.parameterHeaders.map(([name, value]) => [name, value]),
  };
}

const PARAMETER_EDIT = fc.oneof(
  { weight: 5, arbitrary: fc.record({ index: fc.nat(), value: hostileParameter }).map((edit) => ({ kind: 'replace' as const, ...edit })) },
  { weight: 1, arbitrary: fc.record({ index: fc.nat() }).map((edit) => ({ kind: 'repeat' as const, ...edit })) },
  { weight: 1, arbitrary: fc.record({ index: fc.nat() }).map((edit) => ({ kind: 'bare' as const, ...edit })) },
  { weight: 1, arbitrary: fc.record({ index: fc.nat() }).map((edit) => ({ kind: 'omit' as const, ...edit })) },
  {
    weight: 2,
    arbitrary: fc
      .record({ name: fc.constantFrom('__proto__', 'constructor[prototype][polluted]', 'limit[]', 'x', '', '%00', 'a%ffb'), value: hostileParameter })
      .map((edit) => ({ kind: 'unknown' as const, ...edit })),
  },
);
type ParameterEdit = typeof PARAMETER_EDIT extends fc.Arbitrary<infer T> ? T : never;

/** One path or query parameter garbled, repeated, left without a value or out; or an unknown one added. */
function editParameter(operation: FuzzOperation, draft: Draft, edit: ParameterEdit): Edited {
  const parameters = operation.parameters.filter((parameter) => parameter.in === 'path' || parameter.in === 'query');
  if (edit.kind === 'unknown' || parameters.length === 0) {
    const value = 'value' in edit ? edit.value : { label: 'x', text: 'x', httpLayer: false };
    const name = 'name' in edit ? edit.name : 'x';
    draft.query.push([name, value.text]);
    return { label: `query ${name} := ${value.label}`, httpLayer: value.httpLayer, extra: [] };
  }
  const parameter = parameters[edit.index % parameters.length];
  const inPath = parameter.in === 'path';
  const current = inPath ? draft.pathValues[parameter.name] : draft.query.find(([name]) => name === parameter.name)?.[1];
  const set = (pathValue: string, queryValues: (string | null)[]) => {
    if (inPath) draft.pathValues[parameter.name] = pathValue;
    else draft.query = [...draft.query.filter(([name]) => name !== parameter.name), ...queryValues.map((value): [string, string | null] => [parameter.name, value])];
  };
  const named = `${parameter.in} ${parameter.name}`;
  switch (edit.kind) {
    case 'replace':
      set(edit.value.text, [edit.value.text]);
      return { label: `${named} := ${edit.value.label}`, httpLayer: edit.value.httpLayer, extra: [] };
    case 'repeat':
      set(`${current}/${current}`, [current ?? '1', current ?? '2', 'other']);
      return { label: `${named} repeated`, httpLayer: false, extra: [] };
    case 'bare':
      set('', [null]);
      return { label: `${named} without a value`, httpLayer: false, extra: [] };
    default:
      set('', []);
      return { label: `${named} left out`, httpLayer: false, extra: [] };
  }
}

/** One hostile header (or one left out); `valid` is a credential the operation takes, for variations of it. */
function editHeaders(draft: Draft, edit: HeaderMutation, valid: string, credentials: FuzzCredential[]): Edited {
  const one = (label: string, name: string, value: string): Edited => ({ label, httpLayer: hasControl(value), extra: [[name, value]] });
  switch (edit.kind) {
    case 'content-type':
      draft.contentType = edit.value;
      // Without a body the header alone is sent: a media type on a GET is hostile too.
      return { label: `Content-Type: ${printable(edit.value)}`, httpLayer: false, extra: draft.body === undefined ? [['Content-Type', edit.value]] : [] };
    case 'authorization': {
      draft.token = null;
      const value = edit.value.replaceAll('<valid>', valid);
      return one(`Authorization: ${printable(shorten(value, 80))}`, 'Authorization', value);
    }
    case 'other-credential': {
      const other = credentials[edit.index % Math.max(1, credentials.length)];
      draft.token = other?.token ?? null;
      return { label: `credential of ${other?.scheme ?? 'none'} [${other?.roles.join(' ') ?? ''}]`, httpLayer: false, extra: [] };
    }
    case 'no-authorization':
      draft.token = null;
      return { label: 'no Authorization', httpLayer: false, extra: [] };
    case 'duplicate-authorization':
      return { label: 'Authorization twice (a valid one and a bogus one)', httpLayer: false, extra: [['Authorization', 'Bearer bogus']] };
    case 'idempotency-key':
      return one(`Idempotency-Key: ${printable(shorten(edit.value, 80))}`, 'Idempotency-Key', edit.value);
    case 'header':
      return one(`${edit.name}: ${printable(shorten(edit.value, 80))}`, edit.name, edit.value);
    case 'long-header':
      // Past 16 KiB the HTTP layer refuses the head.
      return { label: `a header of ${edit.length} bytes`, httpLayer: edit.length > 15_000, extra: [['X-Fuzz-Padding', 'p'.repeat(edit.length)]] };
    case 'many-headers':
      return {
        label: `${edit.count} extra headers`,
        httpLayer: edit.count * 20 > 15_000,
        extra: Array.from({ length: edit.count }, (_, index): RawHeader => [`X-Fuzz-${index}`, 'vvvvvvvv']),
      };
    default:
      draft.host = edit.value;
      // Without Host an HTTP/1.1 request is refused before any route.
      return { label: edit.value === null ? 'no Host' : `Host: ${shorten(edit.value, 40)}`, httpLayer: edit.value === null, extra: [] };
  }
}

const BODY_EDIT = fc.oneof(
  { weight: 6, arbitrary: fc.record({ slot: fc.nat(), value: hostileJson }).map((edit) => ({ kind: 'replace' as const, ...edit })) },
  { weight: 2, arbitrary: fc.record({ slot: fc.nat(), key: unknownKey, value: hostileJson }).map((edit) => ({ kind: 'add-key' as const, ...edit })) },
  { weight: 1, arbitrary: fc.record({ slot: fc.nat() }).map((edit) => ({ kind: 'drop' as const, ...edit })) },
  { weight: 2, arbitrary: hostileBody.map((whole) => ({ kind: 'whole' as const, ...whole })) },
);

export interface OpenApiFuzzer {
  operations: FuzzOperation[];
  /** Any request for any operation: valid, mutated, hostile headers, HTTP-layer breakage. */
  requests: fc.Arbitrary<FuzzRequest>;
  /** Valid requests for one operation. */
  validRequests(operation: FuzzOperation): fc.Arbitrary<FuzzRequest>;
}

/** The arbitraries of fuzz requests for every operation of `document`. */
export function openApiFuzzer(document: FuzzableDocument, context: FuzzContext): OpenApiFuzzer {
  const resolver = new RefResolver(document);
  const operations = fuzzOperations(document);
  const serverPath = document.servers?.[0]?.url ?? '';
  const basePath = (context.basePath ?? (serverPath.startsWith('/') ? serverPath : '')).replace(/\/$/, '');
  const host = context.host ?? 'localhost';

  const knownFor = (operation: FuzzOperation): Known => (name) => context.knownValuesFor?.(operation, name) ?? context.knownValues?.[name];

  /** A body that takes none (`maxProperties: 0`, not required) is mostly left out, as clients do. */
  const bodyValueOf = (operation: FuzzOperation, known: Known, full: boolean): fc.Arbitrary<unknown> => {
    if (operation.body === null) return fc.constant(undefined);
    const value = valueOf(operation.body.schema, resolver, known, full);
    return operation.body.required ? value : fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: value });
  };

  /** A valid draft; `full` objects in the body carry every declared property. */
  const draftOf = (operation: FuzzOperation, full: boolean): fc.Arbitrary<Built> => {
    const known = knownFor(operation);
    const credentials = credentialsFor(operation, context.credentials);
    const parameters = operation.parameters
      .filter((parameter) => parameter.in !== 'cookie')
      .map((parameter) => {
        const value = withKnown(known(parameter.name), valueOf(parameter.schema, resolver, known, false));
        return fc.tuple(fc.constant(parameter), parameter.required ? fc.constant(true) : fc.boolean(), value);
      });
    const token = operation.security.length === 0 || credentials.length === 0 ? fc.constant(null) : fc.constantFrom(...credentials);
    return fc.record({ parameters: fc.tuple(...parameters), body: bodyValueOf(operation, known, full), token }).map((parts) => {
      const draft: Draft = { pathValues: {}, query: [], parameterHeaders: [], token: parts.token, host, body: parts.body, contentType: null };
      for (const [parameter, present, value] of parts.parameters) {
        if (!present) continue;
        if (parameter.in === 'path') draft.pathValues[parameter.name] = percentEncode(String(value));
        else if (parameter.in === 'query') draft.query.push(...queryEntries(parameter, value));
        else draft.parameterHeaders.push([parameter.name, headerText(value)]);
      }
      if (parts.body !== undefined && operation.body !== null) {
        draft.contentType = operation.body.mediaType.includes('*') ? 'application/json' : operation.body.mediaType;
      }
      return { draft, credentials };
    });
  };

  const write = (operation: FuzzOperation, kind: FuzzKind, draft: Draft, body: string | Buffer | null, edited: Edited | null): FuzzRequest => {
    const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => draft.pathValues[name] ?? '');
    const query = draft.query.map(([name, value]) => (value === null ? name : `${name}=${value}`)).join('&');
    const headers: RawHeader[] = draft.host === null ? [] : [['Host', draft.host]];
    if (draft.token !== null) headers.push(['Authorization', `Bearer ${draft.token}`]);
    if (body !== null && draft.contentType !== null) headers.push(['Content-Type', draft.contentType]);
    headers.push(...draft.parameterHeaders, ...(edited?.extra ?? []), ['Connection', 'close']);
    return describedRequest({
      operation: operationKey(operation),
      kind,
      mutation: edited?.label ?? null,
      httpLayer: edited?.httpLayer ?? false,
      method: operation.method,
      target: `${basePath}${path}${query === '' ? '' : `?${query}`}`,
      version: 'HTTP/1.1',
      headers,
      body,
    });
  };

  const jsonOf = (draft: Draft) => (draft.body === undefined ? null : JSON.stringify(draft.body));

  const valid = (operation: FuzzOperation) => draftOf(operation, false).map(({ draft }) => write(operation, 'valid', draft, jsonOf(draft), null));

  const bodyMutations = (operation: FuzzOperation) =>
    fc.tuple(draftOf(operation, true), BODY_EDIT).map(([built, edit]) => {
      const draft = copyOf(built.draft);
      draft.contentType ??= 'application/json';
      if (edit.kind === 'whole') return write(operation, 'body', draft, edit.body, { label: `body := ${edit.label}`, httpLayer: false, extra: [] });
      const { text, label } = editedJson(draft.body === undefined ? {} : draft.body, edit);
      return write(operation, 'body', draft, text, { label, httpLayer: false, extra: [] });
    });

  const parameterMutations = (operation: FuzzOperation) =>
    fc.tuple(draftOf(operation, false), PARAMETER_EDIT).map(([built, edit]) => {
      const draft = copyOf(built.draft);
      const edited = editParameter(operation, draft, edit);
      return write(operation, 'parameter', draft, jsonOf(draft), edited);
    });

  const headerMutations = (operation: FuzzOperation) =>
    fc.tuple(draftOf(operation, false), headerMutation).map(([built, edit]) => {
      const draft = copyOf(built.draft);
      const valid = draft.token ?? built.credentials[0] ?? context.credentials[0]?.token ?? '';
      const edited = editHeaders(draft, edit, valid, context.credentials);
      return write(operation, 'header', draft, jsonOf(draft), edited);
    });

  const httpMutations = (operation: FuzzOperation) =>
    fc.tuple(draftOf(operation, false), httpMutation).map(([{ draft }, edit]) => breakHttp(write(operation, 'http', draft, jsonOf(draft), null), edit, basePath));

  const requestsFor = (operation: FuzzOperation): fc.Arbitrary<FuzzRequest> =>
    fc.oneof(
      { weight: 3, arbitrary: valid(operation) },
      { weight: operation.body === null ? 1 : 4, arbitrary: bodyMutations(operation) },
      { weight: 3, arbitrary: parameterMutations(operation) },
      { weight: 2, arbitrary: headerMutations(operation) },
      { weight: 1, arbitrary: httpMutations(operation) },
    );

  return { operations, requests: fc.oneof(...operations.map(requestsFor)), validRequests: valid };
}

// ---- editing JSON text ----

type JsonPath = (string | number)[];

/** Every value's path in `value` (the root included), depth first. */
function slotsOf(value: unknown, path: JsonPath = []): JsonPath[] {
  const slots = [path];
  if (Array.isArray(value)) value.forEach((item, index) => slots.push(...slotsOf(item, [...path, index])));
  else if (typeof value === 'object' && value !== null) for (const [key, item] of Object.entries(value)) slots.push(...slotsOf(item, [...path, key]));
  return slots;
}

function valueAt(value: unknown, path: JsonPath): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], value);
}

/** JSON text of `value` with the node at `path` written by `edit` (raw text), everything else as JSON.stringify writes it. */
function renderEdited(value: unknown, path: JsonPath, edit: (current: unknown) => string): string {
  if (path.length === 0) return edit(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) return `[${value.map((item, index) => (index === head ? renderEdited(item, rest, edit) : JSON.stringify(item))).join(',')}]`;
  const entries = Object.entries(value as object).map(([key, item]) => `${JSON.stringify(key)}:${key === head ? renderEdited(item, rest, edit) : JSON.stringify(item)}`);
  return `{${entries.join(',')}}`;
}

const pathText = (path: JsonPath) => (path.length === 0 ? 'body' : `body${path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${key}`)).join('')}`);

type BodyEdit =
  | { kind: 'replace'; slot: number; value: HostileJson & { aim: HostileAim } }
  | { kind: 'add-key'; slot: number; key: string; value: HostileJson }
  | { kind: 'drop'; slot: number };

/** Whether the value at a slot is of the kind a hostile value is aimed at. */
function aimedAt(aim: HostileAim, value: unknown): boolean {
  if (aim === 'text') return typeof value === 'string';
  if (aim === 'scalar') return typeof value === 'number' || typeof value === 'boolean';
  if (aim === 'container') return typeof value === 'object' && value !== null;
  return true;
}

/** Applies one edit to a valid body: a value replaced, a key added to an object, or a value dropped. */
function editedJson(value: unknown, edit: BodyEdit): { text: string; label: string } {
  const slots = slotsOf(value);
  if (edit.kind === 'replace') {
    // A slot of the kind the value is aimed at when there is one (a lone surrogate goes where text goes), else any.
    const aimed = slots.filter((path) => aimedAt(edit.value.aim, valueAt(value, path)));
    const candidates = aimed.length > 0 ? aimed : slots;
    const path = candidates[edit.slot % candidates.length];
    return { text: renderEdited(value, path, () => edit.value.json), label: `${pathText(path)} := ${edit.value.label}` };
  }
  const objects = slots.filter((path) => isPlainObject(valueAt(value, path)));
  if (edit.kind === 'add-key') {
    const path = objects.length === 0 ? [] : objects[edit.slot % objects.length];
    const add = (current: unknown) => {
      const entries = isPlainObject(current) ? Object.entries(current).map(([key, item]) => `${JSON.stringify(key)}:${JSON.stringify(item)}`) : [];
      return `{${[...entries, `${JSON.stringify(edit.key)}:${edit.value.json}`].join(',')}}`;
    };
    return { text: renderEdited(value, path, add), label: `${pathText(path)} += ${printable(shorten(edit.key, 40))}: ${edit.value.label}` };
  }
  const members = slots.filter((path) => path.length > 0);
  if (members.length === 0) return { text: '', label: 'body dropped (empty)' };
  const path = members[edit.slot % members.length];
  const parentPath = path.slice(0, -1);
  const dropped = path[path.length - 1];
  const drop = (parent: unknown) =>
    Array.isArray(parent) ? JSON.stringify(parent.filter((_, index) => index !== dropped)) : JSON.stringify(Object.fromEntries(Object.entries(parent as object).filter(([key]) => key !== dropped)));
  return { text: renderEdited(value, parentPath, drop), label: `${pathText(path)} dropped` };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---- breaking the HTTP layer ----

/** Only the method, version, target shape or framing is changed; which of them says `edit`. */
function breakHttp(request: FuzzRequest, edit: HttpMutation, basePath: string): FuzzRequest {
  const changed = (mutation: string, parts: Partial<FuzzRequest>, httpLayer = true) => describedRequest({ ...request, ...parts, mutation, httpLayer });
  switch (edit.kind) {
    case 'method':
      return changed(`method ${printable(edit.method)}`, { method: edit.method }, !KNOWN_METHODS.includes(edit.method));
    case 'version':
      return changed(`version ${printable(edit.version)}`, { version: edit.version });
    case 'long-query':
      return changed(`query of ${edit.length} characters`, { target: `${request.target}${request.target.includes('?') ? '&' : '?'}pad=${'q'.repeat(edit.length)}` }, edit.length > 15_000);
    case 'raw-byte-in-path':
      return changed(`raw byte ${printable(edit.byte)} in the path`, { target: request.target.replace(/(\?|$)/, `${edit.byte}$1`) });
    case 'framing':
      return framed(request, edit.shape);
    default:
      return changed(`target ${edit.shape}`, { target: reshapedTarget(request.target, edit.shape, basePath) }, false);
  }
}

function reshapedTarget(target: string, shape: string, basePath: string): string {
  const [path, query] = splitTarget(target);
  const rest = path.slice(basePath.length);
  const withQuery = (newPath: string) => (query === null ? newPath : `${newPath}?${query}`);
  switch (shape) {
    case 'trailing slash':
      return withQuery(`${path}/`);
    case 'double slash':
      return withQuery(path.replace(/\/(?=[^/]*$)/, '//'));
    case 'dot segment':
      return withQuery(`${basePath}/.${rest}`);
    case 'dot-dot segment':
      return withQuery(`${basePath}/x/..${rest}`);
    case 'upper case':
      return withQuery(path.toUpperCase());
    case 'absolute form':
      return `http://localhost${target}`;
    case 'asterisk':
      return '*';
    case 'no leading slash':
      return target.replace(/^\//, '');
    case 'empty query':
      return `${path}?${query ?? ''}`;
    case 'ampersands':
      return `${path}?&&${query ?? ''}&&=&`;
    case 'fragment':
      return `${target}#fragment`;
    case 'encoded slash':
      return withQuery(path.replace(/\/(?=[^/]*$)/, '%2F'));
    case 'path parameter':
      return withQuery(`${path};jsessionid=1`);
    default:
      return withQuery(`${basePath.replace(/\//g, '%2F')}${rest}`);
  }
}

function splitTarget(target: string): [string, string | null] {
  const mark = target.indexOf('?');
  return mark === -1 ? [target, null] : [target.slice(0, mark), target.slice(mark + 1)];
}

/** Framing the HTTP parser must refuse (or, for `chunked`, take): each is complete, so no server waits for more. */
function framed(request: FuzzRequest, shape: string): FuzzRequest {
  const body = request.body === null ? '{}' : request.body;
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const headers = request.headers.filter(([name]) => name !== 'Connection');
  const withFraming = (extra: RawHeader[], payload: string | Buffer, httpLayer = true) =>
    describedRequest({ ...request, mutation: `framing: ${shape}`, httpLayer, headers: [...headers, ...extra, ['Connection', 'close']], body: payload });
  const chunked = Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n0\r\n\r\n')]);
  switch (shape) {
    case 'length not a number':
      return withFraming([['Content-Length', 'abc']], bytes);
    case 'negative length':
      return withFraming([['Content-Length', '-1']], bytes);
    case 'length and chunked':
      return withFraming([['Content-Length', String(chunked.length)], ['Transfer-Encoding', 'chunked']], chunked);
    case 'unknown coding':
      return withFraming([['Transfer-Encoding', 'gzip']], bytes);
    case 'two lengths':
      return withFraming([['Content-Length', String(bytes.length)], ['Content-Length', String(bytes.length + 1)]], bytes);
    case 'chunked':
      return withFraming([['Transfer-Encoding', 'chunked']], chunked, false);
    case 'bad chunk size':
      return withFraming([['Transfer-Encoding', 'chunked']], Buffer.concat([Buffer.from('zz\r\n'), bytes, Buffer.from('\r\n0\r\n\r\n')]));
    default:
      return withFraming([['Content-Length', String(bytes.length)]], bytes, false);
  }
}

// ---- printing ----

/** Non-printable and non-ASCII characters as `\uXXXX`, so a counterexample shows exactly what was sent. */
export function printable(text: string): string {
  let shown = '';
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    shown += code >= 0x20 && code < 0x7f ? text[index] : `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return shown;
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}...(${text.length} in all)`;
}

/** `printable(text)` cut at about `budget` characters shown, with the full length when cut. */
function preview(text: string, budget: number): string {
  let shown = '';
  let index = 0;
  while (index < text.length && shown.length < budget) {
    shown += printable(text[index]);
    index += 1;
  }
  return index < text.length ? `${shown}...(${text.length} characters in all)` : shown;
}

/** A short, exact summary: what was sent, long parts cut with their full length. */
export function describeFuzzRequest(request: FuzzRequest): string {
  const body = request.body === null ? 'no body' : Buffer.isBuffer(request.body) ? `bytes ${shorten(request.body.toString('hex'), 200)} (${request.body.length})` : preview(request.body, 400);
  const headers = request.headers.map(([name, value]) => `${preview(name, 40)}: ${preview(value, 120)}`);
  const shownHeaders = headers.length > 12 ? [...headers.slice(0, 12), `...(${headers.length} headers)`] : headers;
  return [
    `${request.kind}${request.mutation === null ? '' : ` (${request.mutation})`} for ${request.operation}`,
    `${preview(request.method, 40)} ${preview(request.target, 300)} ${printable(request.version)}`,
    ...shownHeaders,
    body,
  ].join('\n  ');
}

/** The request with its summary as fast-check's printed form. */
function describedRequest(request: FuzzRequest): FuzzRequest {
  return Object.assign({ ...request }, { [fc.toStringMethod]: () => describeFuzzRequest(request) });
}
