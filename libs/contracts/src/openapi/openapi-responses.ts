/**
 * Responses of the API document: the response headers, and the error responses of each route built from the
 * reasons it can answer (CONTRACT section 2), so a status, its reasons, their retryability and `Retry-After`
 * always agree with `ERROR_REASONS`.
 */
import { ANALYTICS_ERROR_MESSAGES } from '../analytics';
import { ERROR_REASONS, ErrorReason, UNAUTHENTICATED_MESSAGE } from '../errors';
import { JsonSchema, ref, strictObject, UUID_SCHEMA } from './json-schema';

export interface OpenApiHeader {
  $ref?: string;
  description?: string;
  required?: boolean;
  schema?: JsonSchema;
}

export interface OpenApiMediaType {
  /** For `text/event-stream`: the schema of one event, its fields (`id`, `event`, `data`) as properties. */
  schema?: JsonSchema;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, OpenApiHeader>;
  content?: Record<string, OpenApiMediaType>;
}

export type OpenApiResponses = Record<string, OpenApiResponse>;

/** The response header the gateway mints per request (CONTRACT: carried through every service as correlation id). */
export const CORRELATION_ID_RESPONSE_HEADER = 'x-correlation-id';

export const OPENAPI_HEADERS: Record<string, OpenApiHeader> = {
  CorrelationId: {
    description: 'Minted by the gateway for every request and carried through the services and their logs.',
    required: true,
    schema: UUID_SCHEMA,
  },
  RetryAfter: { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'integer', minimum: 0 } },
  RunId: { description: 'The run this response belongs to (interface section 12).', required: true, schema: UUID_SCHEMA },
  Deprecation: { description: 'This route is a deprecated alias.', required: true, schema: { const: 'true' } },
  SuccessorLink: {
    description: 'The route that replaces this alias.',
    required: true,
    schema: { type: 'string', pattern: '^</api/v1/interns/[^>]+/daemon(/sign)?>; rel="successor-version"$' },
  },
};

const headerRef = (name: keyof typeof OPENAPI_HEADERS): OpenApiHeader => ({ $ref: `#/components/headers/${name}` });

/** Headers every response of the API carries. */
export function commonHeaders(): Record<string, OpenApiHeader> {
  return { [CORRELATION_ID_RESPONSE_HEADER]: headerRef('CorrelationId') };
}

/** Headers a deprecated alias adds to every one of its responses (CONTRACT section 8). */
export function aliasHeaders(): Record<string, OpenApiHeader> {
  return { Deprecation: headerRef('Deprecation'), Link: headerRef('SuccessorLink') };
}

/** The run a chat response or a run's stream belongs to. */
export function runIdHeader(): Record<string, OpenApiHeader> {
  return { 'X-Run-Id': headerRef('RunId') };
}

export function fixedHeader(value: string, description: string): OpenApiHeader {
  return { description, required: true, schema: { const: value } };
}

export function jsonResponse(description: string, schema: JsonSchema, headers: Record<string, OpenApiHeader> = {}): OpenApiResponse {
  return { description, headers: { ...commonHeaders(), ...headers }, content: { 'application/json': { schema } } };
}

/**
 * A run's chunks as server-sent events (a chat response, a run's stream). The media type's schema is one event,
 * its `id` and `data` as properties and `data` typed as the chunk (OpenAPI 3.1 has no keyword for the items of a
 * stream; 3.2's `itemSchema` is this), the convention SSE-aware client generators read to type each event.
 */
export function eventStreamResponse(description: string): OpenApiResponse {
  return {
    description,
    headers: { ...commonHeaders(), 'Cache-Control': fixedHeader('no-cache', 'Event streams are never cached.'), ...runIdHeader() },
    content: { 'text/event-stream': { schema: ref('ChatCompletionEvent') } },
  };
}

/** When each reason is answered (CONTRACT section 2), for the responses' descriptions. */
const REASON_WHEN: Record<ErrorReason, string> = {
  invalid_body: 'malformed JSON, unknown or mistyped field, bad list filter or cursor, field rule broken, a body where none is taken, or a file path that is malformed or leads out of the workspace',
  invalid_signature: "the door's `POST /api/invoke` (not under /api/v1): its v2 signature does not hold for this body, route, time, nonce and member",
  forbidden: "the credential's owner lost access, the request came to a regional host, or an intern key tried to change an egress policy",
  personal_identity_required: 'daemon access and signing need a personal OAuth access token, not an API key',
  insufficient_scope: 'the OAuth access token lacks `interns` (any intern route) or `vault:read` (signing)',
  not_found: 'organization outside the programme, lifecycle writes disabled, or an intern (or session, or run) the credential cannot see',
  interaction_unknown: '`tool_call_id` names no question of that session (of that run, on the answer route)',
  timeout: "the route deadline passed; the message quotes the route's own deadline",
  intern_busy: 'the lifecycle operation is not allowed in the current status (files: the intern is being torn down)',
  name_taken: 'the name is already used by the same creator in the workspace',
  idempotency_key_reused: 'the same `Idempotency-Key` came with a different body',
  workspace_loss_not_acknowledged: 'delete of an intern whose workspace archive failed, without `acknowledge_workspace_loss`',
  vault_not_attachable: '`vault_id` is not the vault of another visible intern in the workspace',
  intern_not_running: 'the intern is not `running`',
  busy: "the intern's concurrent-run limit is reached",
  interaction_not_pending: 'the question expired or was already answered',
  limit_reached: 'a per-workspace cap is reached (MAX_INTERNS_PER_WORKSPACE on create, the workspace quota on a file upload); the message names it',
  run_not_active: 'cancel of a run that has already ended',
  run_ended: 'the intern ended the run while the client was connected (stream error chunk only)',
  run_expired: "the run ended longer ago than RUN_REPLAY_RETENTION_MS, or its transcript was purged (TRANSCRIPT_RETENTION_MS, its intern's deletion): its chunks are no longer kept",
  events_expired:
    '`Last-Event-ID` names an event the stream no longer holds (older than EVENTS_REPLAY_RETENTION_MS, dropped for room) or never sent this credential: read the current state, then reconnect without it',
  payload_too_large: 'the body is over 1048576 bytes (425000 on vault routes, FILE_UPLOAD_MAX_BYTES on a file upload)',
  uri_too_long: 'the request line alone is over the 16 KiB limit of a request head (answered by the HTTP layer, before routing)',
  unsupported_media_type: 'a non-empty body without `Content-Type: application/json`',
  headers_too_large: "the request's head (request line and headers) is over 16 KiB (answered by the HTTP layer, before routing)",
  rate_limited: 'the chat turn limiter (chat prompts, invokes and signings per caller per intern per minute), or the run streams or event streams one caller holds open',
  internal_error: 'a transient failure, including a backend service that did not answer',
  configuration_error: 'a missing binding or unusable stored credential, such as a model provider without a key',
  stream_severed: 'the link to the run broke without confirmation (stream error chunk only)',
  vault_writes_disabled: "a vault write while the organization's lifecycle writes are off (reads still work)",
};

/** The error responses of an intern route: 401, then one response per status its reasons fall under. */
export function errorResponses(reasons: readonly ErrorReason[]): OpenApiResponses {
  const responses: OpenApiResponses = {
    '401': {
      description: `Credential missing, unknown, disabled or expired, or a management key: \`${UNAUTHENTICATED_MESSAGE}\`, no \`metadata\`.`,
      headers: commonHeaders(),
      content: { 'application/json': { schema: ref('Unauthenticated') } },
    },
  };
  for (const [status, group] of reasonsByStatus(reasons)) responses[String(status)] = errorResponse(status, group);
  return responses;
}

/** The error responses of a public route (no credential, so no 401). */
export function publicErrorResponses(reasons: readonly ErrorReason[]): OpenApiResponses {
  const { '401': _unauthenticated, ...rest } = errorResponses(reasons);
  return rest;
}

function reasonsByStatus(reasons: readonly ErrorReason[]): [number, ErrorReason[]][] {
  const groups = new Map<number, ErrorReason[]>();
  for (const reason of reasons) {
    const status: number = ERROR_REASONS[reason].status;
    groups.set(status, [...(groups.get(status) ?? []), reason]);
  }
  return [...groups.entries()].sort(([a], [b]) => a - b);
}

function errorResponse(status: number, reasons: ErrorReason[]): OpenApiResponse {
  const retryable = reasons.filter((reason) => ERROR_REASONS[reason].retryable);
  const headers = commonHeaders();
  if (retryable.length === reasons.length) {
    headers['Retry-After'] = headerRef('RetryAfter');
  } else if (retryable.length > 0) {
    headers['Retry-After'] = { description: `Set with ${retryable.map((reason) => `\`${reason}\``).join(', ')}.`, schema: { type: 'integer', minimum: 0 } };
  }
  return {
    description: reasons.map((reason) => `\`${reason}\`: ${REASON_WHEN[reason]}.`).join(' '),
    headers,
    content: { 'application/json': { schema: errorBodyOf(status, reasons) } },
  };
}

/** The envelope narrowed to this status and these reasons, each with its own `retryable`. */
function errorBodyOf(status: number, reasons: ErrorReason[]): JsonSchema {
  const metadata = reasons.map((reason) =>
    strictObject({ reason: { const: reason }, retryable: { const: ERROR_REASONS[reason].retryable } }),
  );
  return strictObject({
    error: strictObject({
      code: { const: status },
      message: { type: 'string' },
      metadata: metadata.length === 1 ? metadata[0] : { oneOf: metadata },
    }),
  });
}

/**
 * Analytics errors: the same statuses, no `metadata` (CONTRACT sections 2 and 9); `body`: a route that reads one;
 * `limited`: a route counted against ANALYTICS_QUERIES_PER_MINUTE (section 22).
 */
export function analyticsErrorResponses(options: { body?: boolean; limited?: boolean } = {}): OpenApiResponses {
  const response = (status: number, description: string, headers: Record<string, OpenApiHeader> = {}): OpenApiResponse => ({
    description,
    headers: { ...commonHeaders(), ...headers },
    content: {
      'application/json': {
        schema: strictObject({ error: strictObject({ code: { const: status }, message: { type: 'string' } }) }),
      },
    },
  });
  return {
    '401': response(
      401,
      `No \`Authorization\` header: \`${ANALYTICS_ERROR_MESSAGES.missingHeader}\`; unknown or unusable credential: \`${UNAUTHENTICATED_MESSAGE}\`.`,
    ),
    '403': response(403, `A valid credential that is not a management key: \`${ANALYTICS_ERROR_MESSAGES.managementOnly}\`.`),
    ...(options.body
      ? {
          '400': response(
            400,
            'Malformed JSON, an unknown field, an unknown metric, dimension, operator or granularity, or a rule broken; the message names it.',
          ),
          '413': response(413, REASON_WHEN.payload_too_large),
          '415': response(415, REASON_WHEN.unsupported_media_type),
        }
      : {}),
    ...(options.limited
      ? {
          '429': response(429, "the organization's analytics queries of this minute are spent (ANALYTICS_QUERIES_PER_MINUTE)", {
            'Retry-After': headerRef('RetryAfter'),
          }),
        }
      : {}),
    '408': response(408, REASON_WHEN.timeout),
    '500': response(500, REASON_WHEN.internal_error, { 'Retry-After': headerRef('RetryAfter') }),
  };
}
