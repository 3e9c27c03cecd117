/**
 * Checks real answers of the API against its OpenAPI document, for tests: the operation exists for the method
 * and path, the status is documented for it, the content type is one it documents, the JSON body (or each
 * event of a stream, its `id:` and `data:` as the properties of the event schema) matches the schema, and every
 * required header is present and valid.
 * Schemas are compiled by ajv (JSON Schema 2020-12, strict) straight from their place in the document, so
 * `$ref`s resolve as the document wrote them.
 */
import Ajv2020 from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { JsonSchema, OpenApiDocument, OpenApiHeader, OpenApiOperation, OpenApiResponse } from '@interns/contracts/openapi';
import { HTTP_METHODS } from '@interns/contracts/openapi';

const DOCUMENT_ID = 'urn:interns:openapi';
/** OpenAPI's keywords around and inside schemas, declared so strict mode still refuses unknown ones (typos). */
const OPENAPI_KEYWORDS = [
  'openapi', 'info', 'servers', 'tags', 'security', 'paths', 'components', 'webhooks', 'jsonSchemaDialect',
  'externalDocs', 'discriminator', 'xml', 'example',
];
const STREAM_END = '[DONE]';
const EVENT_STREAM = 'text/event-stream';

export interface ObservedResponse {
  method: string;
  /** The request target as sent, `/api/v1/...`, query included. */
  url: string;
  status: number;
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The parsed JSON body; ignored for other media types. */
  body?: unknown;
}

export interface ObservedStream extends Omit<ObservedResponse, 'body'> {
  /** The `data` of every event, `[DONE]` included. */
  events: string[];
  /** When given: the `id:` of each event, at the same index (undefined where it had none). */
  ids?: (string | undefined)[];
  /** A stream that has no end (the workspace event stream), left by the client: no `[DONE]` is expected. */
  endless?: boolean;
  /** When given: the `event:` of each event, at the same index (undefined where it had none). */
  types?: (string | undefined)[];
}

interface DocumentedRoute {
  method: string;
  template: string;
  pattern: RegExp;
  /** JSON pointer of the operation. */
  pointer: string;
  operation: OpenApiOperation;
}

export class OpenApiResponseValidator {
  /** `METHOD template status` of every answer checked so far. */
  readonly exercised = new Set<string>();
  private readonly ajv: Ajv2020;
  private readonly routes: DocumentedRoute[];
  private readonly basePath: string;

  constructor(readonly document: OpenApiDocument) {
    // Strict (unknown keywords, type mismatches) except `strictRequired`: `if`/`then` branches name keys the parent declares.
    this.ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, allowUnionTypes: true });
    addFormats(this.ajv);
    this.ajv.addVocabulary(OPENAPI_KEYWORDS);
    this.ajv.addSchema({ ...document, $id: DOCUMENT_ID } as JsonSchema);
    this.basePath = document.servers[0]?.url ?? '';
    this.routes = documentedRoutes(document, this.basePath);
    for (const pointer of schemaPointers(document)) this.validatorAt(pointer);
  }

  /** Every documented operation as `METHOD template`, the form `exercised` uses. */
  operations(): string[] {
    return this.routes.map((route) => `${route.method.toUpperCase()} ${route.template}`);
  }

  /** What is wrong with a JSON (or empty) answer; empty when it matches the document. */
  problems(response: ObservedResponse): string[] {
    const found = this.documentedResponse(response);
    if (typeof found === 'string') return [found];
    const { pointer, documented } = found;
    const problems = this.headerProblems(pointer, documented, response.headers);
    const contentType = headerOf(response.headers, 'content-type');
    if (documented.content === undefined) {
      if (contentType !== undefined) problems.push(`${response.status} documents no body, got ${contentType}`);
      return problems;
    }
    const mediaType = this.mediaTypeOf(documented, contentType);
    if (mediaType === null) return [...problems, `content type ${contentType ?? '(none)'} is not one of ${Object.keys(documented.content).join(', ')}`];
    if (mediaType === 'application/json') {
      problems.push(...this.schemaProblems(`${pointer}/content/${escape(mediaType)}/schema`, response.body, 'body'));
    }
    return problems;
  }

  /**
   * What is wrong with an event stream: the answer as `problems` does, then every event, as the object of its
   * fields (`id` and `event` where given, `data` parsed as JSON when it is JSON, else its text) against the media
   * type's schema, and the `[DONE]` that ends it (an endless stream must send none).
   */
  streamProblems(stream: ObservedStream): string[] {
    const found = this.documentedResponse(stream);
    if (typeof found === 'string') return [found];
    const { pointer, documented } = found;
    const problems = this.headerProblems(pointer, documented, stream.headers);
    const contentType = headerOf(stream.headers, 'content-type');
    const mediaType = this.mediaTypeOf(documented, contentType);
    if (mediaType !== EVENT_STREAM || documented.content?.[mediaType]?.schema === undefined) {
      return [...problems, `content type ${contentType ?? '(none)'} is not a documented event stream`];
    }
    if (stream.endless === true) {
      if (stream.events.includes(STREAM_END)) problems.push(`an endless stream sent ${STREAM_END}`);
    } else if (stream.events.at(-1) !== STREAM_END) {
      problems.push(`the stream does not end with ${STREAM_END}`);
    }
    const eventPointer = `${pointer}/content/${escape(mediaType)}/schema`;
    stream.events.forEach((data, index) => {
      const event = { ...fieldOf('id', stream.ids?.[index]), ...fieldOf('event', stream.types?.[index]), data: parsedData(data) };
      problems.push(...this.schemaProblems(eventPointer, event, `event ${index}`));
    });
    return problems;
  }

  /** What is wrong with a value against the component schema `name`. */
  componentProblems(name: string, value: unknown): string[] {
    return this.schemaProblems(`/components/schemas/${escape(name)}`, value, name);
  }

  private documentedResponse(response: Omit<ObservedResponse, 'body'>): { pointer: string; documented: OpenApiResponse } | string {
    const method = response.method.toLowerCase();
    const path = response.url.split('?')[0] ?? '';
    const route = this.routes.find((candidate) => candidate.method === method && candidate.pattern.test(path));
    if (route === undefined) return `no documented operation for ${method.toUpperCase()} ${path}`;
    const status = String(response.status);
    const documented = route.operation.responses[status];
    this.exercised.add(`${method.toUpperCase()} ${route.template} ${status}`);
    if (documented === undefined) {
      return `${status} is not documented for ${method.toUpperCase()} ${route.template} (documented: ${Object.keys(route.operation.responses).join(', ')})`;
    }
    return { pointer: `${route.pointer}/responses/${status}`, documented };
  }

  private headerProblems(pointer: string, documented: OpenApiResponse, headers: ObservedResponse['headers']): string[] {
    const problems: string[] = [];
    for (const [name, declared] of Object.entries(documented.headers ?? {})) {
      const { header, at } = this.resolveHeader(declared, `${pointer}/headers/${escape(name)}`);
      const value = headerOf(headers, name.toLowerCase());
      if (value === undefined) {
        if (header.required === true) problems.push(`header ${name} is required`);
        continue;
      }
      if (header.schema === undefined) continue;
      problems.push(...this.schemaProblems(`${at}/schema`, coerceHeader(value, header.schema), `header ${name}`));
    }
    return problems;
  }

  private resolveHeader(header: OpenApiHeader, at: string): { header: OpenApiHeader; at: string } {
    if (header.$ref === undefined) return { header, at };
    const target = header.$ref.slice(1);
    return { header: pointerValue(this.document, target) as OpenApiHeader, at: target };
  }

  private mediaTypeOf(documented: OpenApiResponse, contentType: string | undefined): string | null {
    const essence = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const documentedTypes = Object.keys(documented.content ?? {});
    return documentedTypes.find((type) => type === essence || type === '*/*') ?? null;
  }

  private schemaProblems(pointer: string, value: unknown, what: string): string[] {
    const validate = this.validatorAt(pointer);
    if (validate(value)) return [];
    return (validate.errors ?? []).map((error: ErrorObject) => `${what}${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`);
  }

  private validatorAt(pointer: string): ValidateFunction {
    const validate = this.ajv.getSchema(`${DOCUMENT_ID}#${pointer.split('/').map(encodeURIComponent).join('/')}`);
    if (validate === undefined) throw new Error(`no schema at ${pointer}`);
    return validate;
  }
}

function documentedRoutes(document: OpenApiDocument, basePath: string): DocumentedRoute[] {
  const routes: DocumentedRoute[] = [];
  for (const [template, item] of Object.entries(document.paths)) {
    const source = template
      .split('/')
      // `{path}` last (a file's path in a workspace) is the rest of the path, slashes and all.
      .map((segment, index, all) =>
        segment === '{path}' && index === all.length - 1 ? '.*' : /^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('/');
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      routes.push({
        method,
        template,
        pattern: new RegExp(`^${basePath}${source}$`),
        pointer: `/paths/${escape(template)}/${method}`,
        operation,
      });
    }
  }
  return routes;
}

/** Every place in the document that holds a schema: compiled up front, so a broken schema fails at once. */
function schemaPointers(document: OpenApiDocument): string[] {
  const pointers = Object.keys(document.components.schemas).map((name) => `/components/schemas/${escape(name)}`);
  const headerSchemas = (headers: Record<string, OpenApiHeader> | undefined, at: string) =>
    Object.entries(headers ?? {})
      .filter(([, header]) => header.schema !== undefined)
      .map(([name]) => `${at}/headers/${escape(name)}/schema`);
  pointers.push(...headerSchemas(document.components.headers, '/components'));
  for (const [name, parameter] of Object.entries(document.components.parameters)) {
    if (parameter.schema !== undefined) pointers.push(`/components/parameters/${escape(name)}/schema`);
  }
  for (const [template, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      const at = `/paths/${escape(template)}/${method}`;
      for (const type of Object.keys(operation.requestBody?.content ?? {})) pointers.push(`${at}/requestBody/content/${escape(type)}/schema`);
      for (const [status, response] of Object.entries(operation.responses)) {
        const responseAt = `${at}/responses/${status}`;
        pointers.push(...headerSchemas(response.headers, responseAt));
        for (const [type, media] of Object.entries(response.content ?? {})) {
          if (media.schema !== undefined) pointers.push(`${responseAt}/content/${escape(type)}/schema`);
        }
      }
    }
  }
  return pointers;
}

/** An event's field as a property of the event object, absent when the event had none. */
function fieldOf(name: 'id' | 'event', value: string | undefined): Record<string, string> {
  return value === undefined ? {} : { [name]: value };
}

/** An event's `data` as a client reads it: JSON when it parses (a chunk), else the text itself (`[DONE]`). */
function parsedData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/** JSON Pointer escaping of one reference token (RFC 6901). */
function escape(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function pointerValue(root: unknown, pointer: string): unknown {
  return pointer
    .split('/')
    .slice(1)
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, token) => (node as Record<string, unknown> | undefined)?.[token], root);
}

function headerOf(headers: ObservedResponse['headers'], name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Header values are text; a header documented as an integer is compared as the number it spells. */
function coerceHeader(value: string, schema: JsonSchema): unknown {
  if ((schema.type === 'integer' || schema.type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  return value;
}
