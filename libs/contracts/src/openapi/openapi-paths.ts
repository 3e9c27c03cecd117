/**
 * The operations of the API document, one path item per route (paths relative to `API_BASE_PATH`), in the
 * order of docs/api.md: interns, chat and invoke, daemon access and signing, analytics, this document. The
 * routes of runs as resources (section 12) are in openapi-run-paths.ts.
 */
import { ref } from './json-schema';
import {
  BODY_RULES,
  DAEMON_ACCESS_SECURITY,
  ICON_CACHE_CONTROL,
  ICON_ETAG,
  INTERN_ACCESS,
  jsonBody,
  MANAGEMENT_SECURITY,
  NO_BODY,
  NO_BODY_RULES,
  NO_STORE,
  OpenApiPathItem,
  parameterRef,
  PUBLIC,
  SERVICE_FAILURES,
  SIGNING_SECURITY,
} from './openapi-operation';
import {
  analyticsErrorResponses,
  commonHeaders,
  errorResponses,
  eventStreamResponse,
  fixedHeader,
  jsonResponse,
  publicErrorResponses,
  runIdHeader,
} from './openapi-responses';

export const interns: OpenApiPathItem = {
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
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'name_taken', 'idempotency_key_reused', 'vault_not_attachable', 'limit_reached', ...SERVICE_FAILURES]),
    },
  },
};

export const oneIntern: OpenApiPathItem = {
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

export const provision: OpenApiPathItem = {
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

export const suspend: OpenApiPathItem = {
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

export const icon: OpenApiPathItem = {
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

export const chatCompletions: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  post: {
    operationId: 'createChatCompletion',
    tags: ['Chat'],
    summary: 'Prompt the intern, or answer its question, and stream the response',
    description:
      'The intern must be `running`. A prompt with the `session_id` of a session whose run is still going joins that run (202). ' +
      'Closing after the `[DONE]` that follows `tool_calls` keeps the run; closing while a response streams cancels it, unless ' +
      'the request said `background: true` (the run goes on; follow it with `GET /interns/{intern_id}/runs/{run_id}/stream`). ' +
      'A `: keepalive` comment is written after `KEEPALIVE_INTERVAL_MS` of silence. Prompts count against the chat turn limiter.',
    requestBody: jsonBody('ChatCompletionRequest'),
    responses: {
      '200': eventStreamResponse(
        'Server-sent events, each `id: <chunk number>`, `data: <chunk JSON>` and a blank line, ending with `data: [DONE]` ' +
        '(no id). `X-Run-Id` names the run; an answer continues the run it answers.',
      ),
      '202': jsonResponse('The prompt joined the going run of that session (`X-Run-Id`); nothing is streamed.', ref('ChatSteered'), runIdHeader()),
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

export const invoke: OpenApiPathItem = {
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
      '202': jsonResponse('`started`, or `steered` into the going run of that session; `run_id` names that run.', ref('InvokeAccepted')),
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'intern_not_running', 'busy', 'rate_limited', ...SERVICE_FAILURES]),
    },
  },
};

export const daemonAccess: OpenApiPathItem = {
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

export const daemonSign: OpenApiPathItem = {
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

export const signingKeys: OpenApiPathItem = {
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

export const analyticsMeta: OpenApiPathItem = {
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

export const openApiDocumentPath: OpenApiPathItem = {
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
