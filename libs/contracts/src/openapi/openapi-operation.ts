/**
 * What the operations of the API document are made of: their types, the security schemes and requirements, the
 * shared parameters, and the pieces several routes share (error reasons by check, request bodies, headers).
 */
import { ErrorReason } from '../errors';
import { IDEMPOTENCY_KEY_MAX } from '../validation';
import { INTERN_STATUSES, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, LIST_MAX_STATUS_ITEMS } from '../intern';
import { RUN_STATUSES } from '../runs';
import { JsonSchema, ref, SESSION_ID, UUID_SCHEMA } from './json-schema';
import { fixedHeader, OpenApiHeader, OpenApiResponses } from './openapi-responses';

export const HTTP_METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface OpenApiParameter {
  $ref?: string;
  name?: string;
  in?: 'path' | 'query' | 'header';
  description?: string;
  required?: boolean;
  style?: string;
  explode?: boolean;
  schema?: JsonSchema;
}

export interface OpenApiRequestBody {
  description?: string;
  required: boolean;
  content: Record<string, { schema: JsonSchema }>;
}

export type SecurityRequirement = Record<string, string[]>;

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  deprecated?: boolean;
  security?: SecurityRequirement[];
  parameters?: OpenApiParameter[];
  requestBody?: OpenApiRequestBody;
  responses: OpenApiResponses;
}

export type OpenApiPathItem = { parameters?: OpenApiParameter[] } & Partial<Record<HttpMethod, OpenApiOperation>>;

// ---- security: bearer credentials; the requirement's roles name the key kinds and OAuth scopes ----

export const API_KEY = 'apiKey';
export const OAUTH_TOKEN = 'oauthToken';
export const INTERN_ROUTE_SECURITY: SecurityRequirement[] = [{ [API_KEY]: ['user', 'organization', 'intern'] }, { [OAUTH_TOKEN]: ['interns'] }];
export const DAEMON_ACCESS_SECURITY: SecurityRequirement[] = [{ [OAUTH_TOKEN]: ['interns'] }];
export const SIGNING_SECURITY: SecurityRequirement[] = [{ [OAUTH_TOKEN]: ['interns', 'vault:read'] }];
export const MANAGEMENT_SECURITY: SecurityRequirement[] = [{ [API_KEY]: ['management'] }];
export const PUBLIC: SecurityRequirement[] = [];

export const SECURITY_SCHEMES: Record<string, Record<string, string>> = {
  [API_KEY]: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An opaque API key. Roles name the key kinds a route takes: `user`, `organization` and `intern` keys use intern ' +
      'routes (an intern key reaches only its intern); `management` keys use only `/analytics/*` (on intern routes: 401).',
  },
  [OAUTH_TOKEN]: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'An OAuth access token (JWT, `aud` = `interns-api`) of the configured issuer. Roles name the scopes a route needs: ' +
      '`interns` for intern routes and daemon access, `vault:read` too for signing.',
  },
};

// ---- parameters ----

export const parameterRef = (name: string): OpenApiParameter => ({ $ref: `#/components/parameters/${name}` });

/** The `status` filter of a list (CONTRACT section 4) over these statuses. */
function statusFilter(statuses: readonly string[]): OpenApiParameter {
  return {
    name: 'status',
    in: 'query',
    description: `Comma-separated statuses (the comma may be percent-encoded), at most ${LIST_MAX_STATUS_ITEMS} items as sent; repeats collapse.`,
    style: 'form',
    explode: false,
    schema: { type: 'array', minItems: 1, maxItems: LIST_MAX_STATUS_ITEMS, items: { type: 'string', enum: [...statuses] } },
  };
}

/** The number of a chunk of a run, as its `id:` line carries it: 0 (before the first) or more, at most 15 digits. */
const CHUNK_NUMBER: JsonSchema = { type: 'integer', minimum: 0, maximum: 999_999_999_999_999 };

export const PARAMETERS: Record<string, OpenApiParameter> = {
  InternId: {
    name: 'intern_id',
    in: 'path',
    required: true,
    description: 'An id that is not a uuid names no intern: 404.',
    schema: UUID_SCHEMA,
  },
  Limit: {
    name: 'limit',
    in: 'query',
    description: `Page size, 1-${LIST_MAX_LIMIT}.`,
    schema: { type: 'integer', minimum: 1, maximum: LIST_MAX_LIMIT, default: LIST_DEFAULT_LIMIT },
  },
  Status: statusFilter(INTERN_STATUSES),
  RunStatus: statusFilter(RUN_STATUSES),
  StartingAfter: {
    name: 'starting_after',
    in: 'query',
    description: 'The opaque, tamper-evident `next_cursor` of the previous page; any other value: 400.',
    schema: { type: 'string', minLength: 1 },
  },
  SessionId: {
    name: 'session_id',
    in: 'query',
    description: 'Only the runs of this session.',
    schema: SESSION_ID,
  },
  RunId: {
    name: 'run_id',
    in: 'path',
    required: true,
    description: 'An id that is not a uuid names no run: 404.',
    schema: UUID_SCHEMA,
  },
  ChunkStartingAfter: {
    name: 'starting_after',
    in: 'query',
    description: 'Resume after this chunk (an `id:` the stream sent); wins over `Last-Event-ID`. Anything but a chunk number: 400.',
    schema: CHUNK_NUMBER,
  },
  LastEventId: {
    name: 'Last-Event-ID',
    in: 'header',
    description: 'Resume after this chunk, as an EventSource sends it when it reconnects. Anything but a chunk number: 400.',
    schema: CHUNK_NUMBER,
  },
  WorkspaceId: {
    name: 'workspace_id',
    in: 'query',
    description: "Must be the credential's workspace (another workspace: 404).",
    schema: UUID_SCHEMA,
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    description:
      'Same key and same body: the finished create again (200) or its unfinished work resumed; same key, another body: 409. ' +
      'Without it there is no deduplication.',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX },
  },
  IconVersion: {
    name: 'v',
    in: 'query',
    description: 'The `icon_sha256`; when it matches, the answer may be cached for a year (`immutable`).',
    schema: { type: 'string' },
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    description: 'The ETag of a kept copy: 304 when it still matches.',
    schema: { type: 'string' },
  },
};

// ---- shared pieces of the operations ----

/** Checks 1-4 and 7 of CONTRACT section 1, then what any service call can end in. */
export const INTERN_ACCESS: ErrorReason[] = ['forbidden', 'insufficient_scope', 'not_found'];
export const SERVICE_FAILURES: ErrorReason[] = ['timeout', 'internal_error', 'configuration_error'];
/** Body rules (CONTRACT section 4), for routes that take a JSON body. */
export const BODY_RULES: ErrorReason[] = ['invalid_body', 'payload_too_large', 'unsupported_media_type'];
/** Provision and suspend take no body: no 415, but a body other than `{}` is 400 and the size limit holds. */
export const NO_BODY_RULES: ErrorReason[] = ['invalid_body', 'payload_too_large'];

export const ICON_ETAG: OpenApiHeader = {
  description: 'The quoted `icon_sha256`.',
  required: true,
  schema: { type: 'string', pattern: '^"[0-9a-f]{64}"$' },
};
export const ICON_CACHE_CONTROL: OpenApiHeader = {
  description: 'With `?v=<icon_sha256>`: `private, max-age=31536000, immutable`; otherwise revalidate with `If-None-Match`.',
  required: true,
  schema: { enum: ['private, max-age=31536000, immutable', 'private, no-cache'] },
};
export const NO_STORE = fixedHeader('no-store', 'Revealed tokens and signatures are personal and per request.');

export function jsonBody(schemaName: string, description?: string, required = true): OpenApiRequestBody {
  return {
    ...(description === undefined ? {} : { description }),
    required,
    content: { 'application/json': { schema: ref(schemaName) } },
  };
}

export const NO_BODY: OpenApiRequestBody = {
  description: 'None, or `{}`, with any content type.',
  required: false,
  content: { '*/*': { schema: ref('EmptyCommandBody') } },
};
