/**
 * The OpenAPI 3.1 document of the Interns API (CONTRACT.md, interface version 1.0.0), served by the gateway at
 * `GET /api/v1/openapi.json`. Pure data built from the contract's own constants and request schemas; a unit
 * test validates it against the OpenAPI 3.1 schema and the gateway's route table, and an end-to-end test
 * validates real answers of the running system against it.
 */
import { ErrorReason } from '../errors';
import { IDEMPOTENCY_KEY_MAX } from '../validation';
import { INTERN_STATUSES, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, LIST_MAX_STATUS_ITEMS } from '../intern';
import { JsonSchema, ref, UUID_SCHEMA } from './json-schema';
import {
  aliasHeaders,
  analyticsErrorResponses,
  commonHeaders,
  errorResponses,
  fixedHeader,
  jsonResponse,
  OPENAPI_HEADERS,
  OpenApiHeader,
  OpenApiResponses,
  publicErrorResponses,
} from './openapi-responses';
import { OPENAPI_SCHEMAS } from './openapi-schemas';

export const OPENAPI_VERSION = '3.1.0';
export const API_INTERFACE_VERSION = '1.0.0';
/** Every path of the document is relative to this server URL. */
export const API_BASE_PATH = '/api/v1';
/** Where the gateway serves this document, relative to `API_BASE_PATH`. */
export const OPENAPI_DOCUMENT_PATH = '/openapi.json';

export const HTTP_METHODS = ['get', 'post', 'patch', 'delete'] as const;
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

export interface OpenApiDocument {
  openapi: typeof OPENAPI_VERSION;
  info: { title: string; version: string; description: string; license: { name: string; identifier: string } };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  security: SecurityRequirement[];
  paths: Record<string, OpenApiPathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters: Record<string, OpenApiParameter>;
    headers: Record<string, OpenApiHeader>;
    securitySchemes: Record<string, Record<string, string>>;
  };
}

// ---- security: bearer credentials; the requirement's roles name the key kinds and OAuth scopes ----

const API_KEY = 'apiKey';
const OAUTH_TOKEN = 'oauthToken';
const INTERN_ROUTE_SECURITY: SecurityRequirement[] = [{ [API_KEY]: ['user', 'organization', 'intern'] }, { [OAUTH_TOKEN]: ['interns'] }];
const DAEMON_ACCESS_SECURITY: SecurityRequirement[] = [{ [OAUTH_TOKEN]: ['interns'] }];
const SIGNING_SECURITY: SecurityRequirement[] = [{ [OAUTH_TOKEN]: ['interns', 'vault:read'] }];
const MANAGEMENT_SECURITY: SecurityRequirement[] = [{ [API_KEY]: ['management'] }];
const PUBLIC: SecurityRequirement[] = [];

const SECURITY_SCHEMES: Record<string, Record<string, string>> = {
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

const parameterRef = (name: string): OpenApiParameter => ({ $ref: `#/components/parameters/${name}` });

const PARAMETERS: Record<string, OpenApiParameter> = {
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
  Status: {
    name: 'status',
    in: 'query',
    description: `Comma-separated statuses (the comma may be percent-encoded), at most ${LIST_MAX_STATUS_ITEMS} items as sent; repeats collapse.`,
    style: 'form',
    explode: false,
    schema: { type: 'array', minItems: 1, maxItems: LIST_MAX_STATUS_ITEMS, items: { type: 'string', enum: [...INTERN_STATUSES] } },
  },
  StartingAfter: {
    name: 'starting_after',
    in: 'query',
    description: 'The opaque, tamper-evident `next_cursor` of the previous page; any other value: 400.',
    schema: { type: 'string', minLength: 1 },
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
const INTERN_ACCESS: ErrorReason[] = ['forbidden', 'insufficient_scope', 'not_found'];
const SERVICE_FAILURES: ErrorReason[] = ['timeout', 'internal_error', 'configuration_error'];
/** Body rules (CONTRACT section 4), for routes that take a JSON body. */
const BODY_RULES: ErrorReason[] = ['invalid_body', 'payload_too_large', 'unsupported_media_type'];
/** Provision and suspend take no body: no 415, but a body other than `{}` is 400 and the size limit holds. */
const NO_BODY_RULES: ErrorReason[] = ['invalid_body', 'payload_too_large'];

const ICON_ETAG: OpenApiHeader = {
  description: 'The quoted `icon_sha256`.',
  required: true,
  schema: { type: 'string', pattern: '^"[0-9a-f]{64}"$' },
};
const ICON_CACHE_CONTROL: OpenApiHeader = {
  description: 'With `?v=<icon_sha256>`: `private, max-age=31536000, immutable`; otherwise revalidate with `If-None-Match`.',
  required: true,
  schema: { enum: ['private, max-age=31536000, immutable', 'private, no-cache'] },
};
const NO_STORE = fixedHeader('no-store', 'Revealed tokens and signatures are personal and per request.');

function jsonBody(schemaName: string, description?: string, required = true): OpenApiRequestBody {
  return {
    ...(description === undefined ? {} : { description }),
    required,
    content: { 'application/json': { schema: ref(schemaName) } },
  };
}

const NO_BODY: OpenApiRequestBody = {
  description: 'None, or `{}`, with any content type.',
  required: false,
  content: { '*/*': { schema: ref('EmptyCommandBody') } },
};

// ---- operations ----

const interns: OpenApiPathItem = {
  get: {
    operationId: 'listInterns',
    tags: ['Interns'],
    summary: 'List the interns the credential can see',
    description: 'Newest first. Unknown query parameters are ignored. An intern key on the collection: 404.',
    parameters: ['Limit', 'Status', 'StartingAfter', 'WorkspaceId'].map(parameterRef),
    responses: {
      '200': jsonResponse('A page of interns.', ref('InternList')),
      ...errorResponses([...INTERN_ACCESS, 'invalid_body', ...SERVICE_FAILURES]),
    },
  },
  post: {
    operationId: 'createIntern',
    tags: ['Interns'],
    summary: 'Create an intern, its private vault and its icon',
    description: 'With `provision: true` the intern is queued for provisioning at once. An intern key on the collection: 404.',
    parameters: [parameterRef('IdempotencyKey')],
    requestBody: jsonBody('CreateInternRequest', 'Omitted `description`, `instructions` and `model` read back as `null`.'),
    responses: {
      '201': jsonResponse('Created.', ref('Intern')),
      '200': jsonResponse('An `Idempotency-Key` replayed a finished create: the same intern.', ref('Intern')),
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'name_taken', 'idempotency_key_reused', 'vault_not_attachable', ...SERVICE_FAILURES]),
    },
  },
};

const oneIntern: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'getIntern',
    tags: ['Interns'],
    summary: 'Get an intern',
    responses: {
      '200': jsonResponse('The intern.', ref('InternDetail')),
      ...errorResponses([...INTERN_ACCESS, ...SERVICE_FAILURES]),
    },
  },
  patch: {
    operationId: 'updateIntern',
    tags: ['Interns'],
    summary: 'Change name, description, instructions or model',
    description: 'Omitted fields stay; `null` clears a nullable one (`model: null` = workspace default). A model change applies from the next provision.',
    requestBody: jsonBody('UpdateInternRequest'),
    responses: {
      '200': jsonResponse('The updated intern.', ref('Intern')),
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'intern_busy', 'name_taken', ...SERVICE_FAILURES]),
    },
  },
  delete: {
    operationId: 'deleteIntern',
    tags: ['Interns'],
    summary: 'Tear an intern down',
    description: 'Runs end, the runtime stops, the workspace is archived, vault and disk are removed; then the intern is gone (404).',
    requestBody: jsonBody('DeleteInternRequest', 'Optional.', false),
    responses: {
      '202': jsonResponse('Teardown started (or already going).', ref('Deleting')),
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'workspace_loss_not_acknowledged', ...SERVICE_FAILURES]),
    },
  },
};

const provision: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  post: {
    operationId: 'provisionIntern',
    tags: ['Interns'],
    summary: 'Queue a stopped or failed intern for provisioning',
    description: 'While `queued`, `provisioning` or `awaiting_chatapp_install`: 202 and nothing new happens.',
    requestBody: NO_BODY,
    responses: {
      '202': jsonResponse('Queued.', ref('Provisioning')),
      ...errorResponses([...INTERN_ACCESS, ...NO_BODY_RULES, 'intern_busy', ...SERVICE_FAILURES]),
    },
  },
};

const suspend: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  post: {
    operationId: 'suspendIntern',
    tags: ['Interns'],
    summary: 'Stop an intern, keeping its disk and configuration',
    description: 'Active runs end with `run_ended`. While `stopped` or `failed`: 200, no change.',
    requestBody: NO_BODY,
    responses: {
      '200': jsonResponse('Stopped.', ref('Suspended')),
      ...errorResponses([...INTERN_ACCESS, ...NO_BODY_RULES, 'intern_busy', ...SERVICE_FAILURES]),
    },
  },
};

const icon: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'getInternIcon',
    tags: ['Interns'],
    summary: "The intern's identicon",
    parameters: [parameterRef('IconVersion'), parameterRef('IfNoneMatch')],
    responses: {
      '200': {
        description: 'PNG bytes whose SHA-256 is `icon_sha256`.',
        headers: { ...commonHeaders(), ETag: ICON_ETAG, 'Cache-Control': ICON_CACHE_CONTROL },
        content: { 'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } } },
      },
      '304': {
        description: '`If-None-Match` names the current ETag.',
        headers: { ...commonHeaders(), ETag: ICON_ETAG, 'Cache-Control': ICON_CACHE_CONTROL },
      },
      ...errorResponses([...INTERN_ACCESS, ...SERVICE_FAILURES]),
    },
  },
};

const chatCompletions: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  post: {
    operationId: 'createChatCompletion',
    tags: ['Chat'],
    summary: 'Prompt the intern, or answer its question, and stream the response',
    description:
      'The intern must be `running`. A prompt with the `session_id` of a session whose run is still going joins that run (202). ' +
      'Closing after the `[DONE]` that follows `tool_calls` keeps the run; closing while a response streams cancels it. ' +
      'A `: keepalive` comment is written after `KEEPALIVE_INTERVAL_MS` of silence. Prompts count against the chat turn limiter.',
    requestBody: jsonBody('ChatCompletionRequest'),
    responses: {
      '200': {
        description: 'Server-sent events, each `data: <chunk JSON>` and a blank line, ending with `data: [DONE]`.',
        headers: { ...commonHeaders(), 'Cache-Control': fixedHeader('no-cache', 'Event streams are never cached.') },
        content: {
          'text/event-stream': {
            schema: { type: 'string', description: 'Events whose `data` is a ChatCompletionChunk, then `[DONE]`.' },
            'x-event-data': ref('ChatCompletionChunk'),
          },
        },
      },
      '202': jsonResponse('The prompt joined the going run of that session; nothing is streamed.', ref('ChatSteered')),
      ...errorResponses([
        ...INTERN_ACCESS,
        ...BODY_RULES,
        'interaction_unknown',
        'intern_not_running',
        'busy',
        'interaction_not_pending',
        'rate_limited',
        ...SERVICE_FAILURES,
      ]),
    },
  },
};

const invoke: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  post: {
    operationId: 'invokeIntern',
    tags: ['Chat'],
    summary: 'Start a self-driving run without a stream',
    description:
      'Answers as soon as the run is accepted. A `session_id` is accepted only from the caller it was issued to, on the same ' +
      'intern, and only if issued by invoke (anything else: 404). Counts against the chat turn limiter.',
    requestBody: jsonBody('InvokeRequest'),
    responses: {
      '202': jsonResponse('`started`, or `steered` into the going run of that session.', ref('InvokeAccepted')),
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'intern_not_running', 'busy', 'rate_limited', ...SERVICE_FAILURES]),
    },
  },
};

const daemonAccess: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'getDaemonAccess',
    tags: ['Daemon'],
    summary: "Reveal the intern's daemon origin and a fresh token",
    description: 'OAuth access token only; the intern must be `running`. Each reveal is recorded.',
    security: DAEMON_ACCESS_SECURITY,
    responses: {
      '200': jsonResponse('The origin and a token.', ref('DaemonAccess'), { 'Cache-Control': NO_STORE }),
      ...errorResponses([...INTERN_ACCESS, 'personal_identity_required', 'intern_not_running', ...SERVICE_FAILURES]),
    },
  },
};

const daemonSign: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  post: {
    operationId: 'signDaemonRequest',
    tags: ['Daemon'],
    summary: "Sign a request to the intern's daemon",
    description:
      'OAuth access token with `vault:read`; the intern must be `running`. Counts against the chat turn limiter. ' +
      'Public key: `GET /daemon/signing-keys`.',
    security: SIGNING_SECURITY,
    requestBody: jsonBody('DaemonSignRequest'),
    responses: {
      '200': jsonResponse('The signing headers.', ref('DaemonSignature'), { 'Cache-Control': NO_STORE }),
      ...errorResponses([
        ...INTERN_ACCESS,
        ...BODY_RULES,
        'personal_identity_required',
        'intern_not_running',
        'rate_limited',
        ...SERVICE_FAILURES,
      ]),
    },
  },
};

const signingKeys: OpenApiPathItem = {
  get: {
    operationId: 'getDaemonSigningKeys',
    tags: ['Daemon'],
    summary: 'The public keys daemons verify signed requests with',
    security: PUBLIC,
    responses: {
      '200': jsonResponse('A JWKS of Ed25519 keys.', ref('SigningKeys'), {
        'Cache-Control': fixedHeader('public, max-age=300', 'Keys change only with a rotation.'),
      }),
      ...publicErrorResponses(['timeout', 'internal_error']),
    },
  },
};

const analyticsMeta: OpenApiPathItem = {
  get: {
    operationId: 'getAnalyticsMeta',
    tags: ['Analytics'],
    summary: 'What analytics can group by, filter with and compute',
    description: 'Management keys only. Errors carry no `metadata`.',
    security: MANAGEMENT_SECURITY,
    responses: {
      '200': jsonResponse('The catalogue.', ref('AnalyticsMeta')),
      ...analyticsErrorResponses(),
    },
  },
};

const openApiDocumentPath: OpenApiPathItem = {
  get: {
    operationId: 'getOpenApiDocument',
    tags: ['Meta'],
    summary: 'This document',
    security: PUBLIC,
    responses: {
      '200': jsonResponse('The OpenAPI 3.1 document of this interface.', ref('OpenApiDocument'), {
        'Cache-Control': fixedHeader('public, max-age=300', 'The document changes only with a deployment.'),
        ETag: { description: 'A strong validator of the document: 304 on `If-None-Match`.', required: true, schema: { type: 'string' } },
      }),
      '304': { description: '`If-None-Match` names the current ETag.', headers: commonHeaders() },
    },
  },
};

/**
 * A deprecated alias answers exactly like its route and adds `Deprecation` and `Link` to every answer,
 * refusals included (CONTRACT section 8).
 */
function deprecatedAlias(item: OpenApiPathItem, successor: string): OpenApiPathItem {
  const alias: OpenApiPathItem = { ...item };
  for (const method of HTTP_METHODS) {
    const operation = item[method];
    if (operation === undefined) continue;
    const responses: OpenApiResponses = {};
    for (const [status, response] of Object.entries(operation.responses)) {
      responses[status] = { ...response, headers: { ...response.headers, ...aliasHeaders() } };
    }
    alias[method] = {
      ...operation,
      operationId: `${operation.operationId}Deprecated`,
      summary: `${operation.summary} (deprecated alias of \`${successor}\`)`,
      deprecated: true,
      responses,
    };
  }
  return alias;
}

export const OPENAPI_DOCUMENT: OpenApiDocument = {
  openapi: OPENAPI_VERSION,
  info: {
    title: 'Interns API',
    version: API_INTERFACE_VERSION,
    description:
      'Hosted assistant runtimes ("interns") owned by a workspace: lifecycle, chat, invoke, daemon access and signing, ' +
      'analytics. Every request carries `Authorization: Bearer <credential>` unless a route says otherwise. Intern routes ' +
      'are refused on regional hosts (`<region>.<PUBLIC_HOST>`: 403). Errors use the envelope ' +
      '`{"error":{"code","message","metadata":{"reason","retryable"}}}` (no `metadata` on 401 and on analytics routes).\n\n' +
      'Health (`/health/live`, `/health/ready`) and Prometheus `/metrics` are not part of this document: they are the ' +
      'operating interface every process answers on its own port (the gateway on `GATEWAY_PORT`, outside `/api/v1`), ' +
      'probed by orchestrators rather than called by API clients; the README describes them.',
    license: { name: 'Apache 2.0', identifier: 'Apache-2.0' },
  },
  servers: [{ url: API_BASE_PATH, description: 'The gateway, relative to the host the document was fetched from.' }],
  tags: [
    { name: 'Interns', description: 'Lifecycle of interns (CONTRACT sections 3-5).' },
    { name: 'Chat', description: 'Chat completions and invoke (sections 6-7).' },
    { name: 'Daemon', description: 'Daemon access and request signing (section 8).' },
    { name: 'Analytics', description: 'Analytics catalogue (section 9).' },
    { name: 'Meta', description: 'This document.' },
  ],
  security: INTERN_ROUTE_SECURITY,
  paths: {
    '/interns': interns,
    '/interns/{intern_id}': oneIntern,
    '/interns/{intern_id}/provision': provision,
    '/interns/{intern_id}/suspend': suspend,
    '/interns/{intern_id}/icon': icon,
    '/interns/{intern_id}/chat/completions': chatCompletions,
    '/interns/{intern_id}/invoke': invoke,
    '/interns/{intern_id}/daemon': daemonAccess,
    '/interns/{intern_id}/daemon-access': deprecatedAlias(daemonAccess, '/interns/{intern_id}/daemon'),
    '/interns/{intern_id}/daemon/sign': daemonSign,
    '/interns/{intern_id}/daemon-access/sign': deprecatedAlias(daemonSign, '/interns/{intern_id}/daemon/sign'),
    '/daemon/signing-keys': signingKeys,
    '/analytics/meta': analyticsMeta,
    [OPENAPI_DOCUMENT_PATH]: openApiDocumentPath,
  },
  components: {
    schemas: OPENAPI_SCHEMAS,
    parameters: PARAMETERS,
    headers: OPENAPI_HEADERS,
    securitySchemes: SECURITY_SCHEMES,
  },
};
