/**
 * `components.schemas` of the API document: the resources, answers, chat chunks and error envelopes of the
 * contract, as strict as the contract allows (every key the contract promises is required, none other is
 * allowed, integers are integers, nullable keys are present as `null`). Request bodies come from the zod
 * schemas the gateway parses them with. The run resources are in openapi-run-schemas.ts.
 */
import { ANALYTICS_CATALOGUE } from '../analytics';
import { APPROVAL_MODES, ELICITATION_FIELD_TYPES, MAX_PROMPT_CHARS, PERMISSION_OPTIONS, PROVIDE_INPUT_TOOL } from '../chat';
import { chatSchema, invokeSchema } from '../chat-validation';
import { BODY_SHA256_PATTERN, INVOKE_HEADERS, signBodySchema } from '../daemon';
import { ERROR_REASONS } from '../errors';
import { INTERN_STATUSES } from '../intern';
import { createInternSchema, deleteInternSchema, MODEL_PATTERN, NAME_PATTERN, updateInternSchema } from '../validation';
import { JsonSchema, listPage, NON_EMPTY_STRING, nullable, ref, requestSchemaOf, SESSION_ID, strictObject, TIMESTAMP, UUID_SCHEMA } from './json-schema';
import { ANALYTICS_QUERY_SCHEMAS } from './openapi-analytics-query';
import { RUN_SCHEMAS } from './openapi-run-schemas';
import { WEBHOOK_SCHEMAS } from './openapi-webhook-schemas';
import { EVENT_SCHEMAS } from './openapi-event-schemas';
import { VAULT_SCHEMAS } from './openapi-vault-schemas';
import { EGRESS_SCHEMAS } from './openapi-egress-schemas';
import { FILE_SCHEMAS } from './openapi-files-paths';

const SHA256_HEX: JsonSchema = { type: 'string', pattern: '^[0-9a-f]{64}$' };
const NON_NEGATIVE_INTEGER: JsonSchema = { type: 'integer', minimum: 0 };
/** `chatcmpl-<uuid>`, constant per response. */
const CHUNK_ID_PATTERN = '^chatcmpl-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const TITLE_CASE_LABEL = '^[A-Z][A-Za-z0-9]*( [A-Z][A-Za-z0-9]*)*$';

/** The fourteen keys every Intern answer carries (create, update, get, list). */
const INTERN_PROPERTIES: Record<string, JsonSchema> = {
  id: UUID_SCHEMA,
  name: { type: 'string', minLength: 2, maxLength: 40, pattern: NAME_PATTERN.source },
  description: nullable({ type: 'string', maxLength: 2000 }),
  instructions: nullable({ type: 'string', maxLength: 100000 }),
  model: nullable({ type: 'string', maxLength: 200, pattern: MODEL_PATTERN.source }),
  status: ref('InternStatus'),
  last_failure_message: nullable({ type: 'string' }),
  progress: nullable(ref('InternProgress')),
  hostname: nullable({ type: 'string', minLength: 1 }),
  workspace_id: UUID_SCHEMA,
  vault_id: UUID_SCHEMA,
  attached_vault_id: nullable(UUID_SCHEMA),
  created_at: TIMESTAMP,
  updated_at: TIMESTAMP,
};

const INTERN_DETAIL_PROPERTIES: Record<string, JsonSchema> = {
  ...INTERN_PROPERTIES,
  icon_sha256: { ...nullable(SHA256_HEX), description: 'SHA-256 (hex) of the PNG served at `/interns/{intern_id}/icon`.' },
  created_by_you: {
    type: 'boolean',
    description: 'Whether the calling member created the intern; absent when the credential acts for no member (organization and intern keys).',
  },
};

const INTERN_SCHEMAS: Record<string, JsonSchema> = {
  InternStatus: { type: 'string', enum: [...INTERN_STATUSES] },
  InternProgress: {
    ...strictObject({
      step_label: NON_EMPTY_STRING,
      step_number: { type: 'integer', minimum: 1 },
      total_steps: { type: 'integer', minimum: 1 },
    }),
    description: 'Only while `provisioning`: step 1 of 4 `Preparing workspace disk` to 4 `Waiting for runtime health`.',
  },
  Intern: {
    ...strictObject(INTERN_PROPERTIES),
    description: 'The Intern as create and update answer it: every key present, nullable ones as explicit `null`.',
  },
  InternDetail: {
    ...strictObject(INTERN_DETAIL_PROPERTIES, [...Object.keys(INTERN_PROPERTIES), 'icon_sha256']),
    description: 'The Intern as get and list answer it: with `icon_sha256`, and `created_by_you` when the credential acts for a member.',
  },
  InternList: listPage(ref('InternDetail'), 'Newest first (`created_at` desc, then `id` desc).'),
  Deleting: strictObject({ deleting: { const: true } }),
  Provisioning: strictObject({ provisioning: { const: true } }),
  Suspended: strictObject({ suspended: { const: true } }),
  CreateInternRequest: requestSchemaOf(createInternSchema),
  UpdateInternRequest: requestSchemaOf(updateInternSchema),
  DeleteInternRequest: requestSchemaOf(deleteInternSchema),
  EmptyCommandBody: {
    type: 'object',
    maxProperties: 0,
    description: 'Provision and suspend take no body: nothing, or `{}` whatever the content type; anything else is 400.',
  },
};

/** One chunk shape: the fields every chunk shares, then `choices` and any extra keys of that kind. */
function chunk(choices: JsonSchema, extra: Record<string, JsonSchema> = {}): JsonSchema {
  return strictObject({ ...chunkHead(), choices, ...extra });
}

function chunkHead(): Record<string, JsonSchema> {
  return {
    id: { type: 'string', pattern: CHUNK_ID_PATTERN },
    object: { const: 'chat.completion.chunk' },
    created: { type: 'integer', minimum: 0, description: 'Unix seconds, constant per response.' },
    model: { type: 'string' },
  };
}

/** `choices` holding the one choice: index 0, this delta, this finish reason. */
function oneChoice(delta: JsonSchema, finishReason: JsonSchema): JsonSchema {
  return {
    type: 'array',
    minItems: 1,
    maxItems: 1,
    items: strictObject({ index: { const: 0 }, delta, finish_reason: finishReason }),
  };
}

const NOT_FINISHED: JsonSchema = { type: 'null' };
const EMPTY_DELTA: JsonSchema = { type: 'object', maxProperties: 0 };

const CHAT_SCHEMAS: Record<string, JsonSchema> = {
  ChatCompletionRequest: {
    ...requestSchemaOf(chatSchema),
    description:
      'OpenAI-style chat request; only the last message is acted on (a user prompt, or a `tool` reply answering a ' +
      `\`${PROVIDE_INPUT_TOOL}\` call). \`model\` and other OpenAI fields are accepted and ignored. The last user ` +
      `message is at most ${MAX_PROMPT_CHARS} characters; \`approval_mode\` is one of ${APPROVAL_MODES.join(', ')} (default self-drive). ` +
      'With `background: true` (default false) closing the connection does not cancel the run: it goes on and stays readable ' +
      'with the run stream route.',
  },
  InvokeRequest: requestSchemaOf(invokeSchema),
  ChatSteered: strictObject({ session_id: SESSION_ID, status: { const: 'steered' } }),
  InvokeAccepted: {
    ...strictObject({ session_id: SESSION_ID, status: { enum: ['started', 'steered'] }, run_id: UUID_SCHEMA }),
    description: '`run_id` names the run started, or the going run the input was steered into.',
  },
  Usage: strictObject({ prompt_tokens: NON_NEGATIVE_INTEGER, completion_tokens: NON_NEGATIVE_INTEGER, total_tokens: NON_NEGATIVE_INTEGER }),
  PermissionQuestion: strictObject({
    kind: { const: 'permission' },
    operation: { type: 'string' },
    options: { const: [...PERMISSION_OPTIONS] },
  }),
  ElicitationQuestion: strictObject({
    kind: { const: 'elicitation' },
    message: { type: 'string' },
    fields: {
      type: 'array',
      items: strictObject({ name: NON_EMPTY_STRING, type: { enum: [...ELICITATION_FIELD_TYPES] }, required: { type: 'boolean' } }),
    },
  }),
  ProvideInputArguments: {
    oneOf: [ref('PermissionQuestion'), ref('ElicitationQuestion')],
    description: `The JSON-decoded \`arguments\` of a \`${PROVIDE_INPUT_TOOL}\` call.`,
  },
  ProvideInputToolCall: strictObject({
    index: { const: 0 },
    id: NON_EMPTY_STRING,
    type: { const: 'function' },
    function: strictObject({
      name: { const: PROVIDE_INPUT_TOOL },
      arguments: { type: 'string', contentMediaType: 'application/json', contentSchema: ref('ProvideInputArguments') },
    }),
  }),
  ChatRoleChunk: chunk(oneChoice(strictObject({ role: { const: 'assistant' } }), NOT_FINISHED)),
  ChatContentChunk: chunk(oneChoice(strictObject({ content: { type: 'string' } }), NOT_FINISHED)),
  ChatToolCallChunk: chunk(
    oneChoice(strictObject({ tool_calls: { type: 'array', minItems: 1, maxItems: 1, items: ref('ProvideInputToolCall') } }), NOT_FINISHED),
  ),
  ChatFinishChunk: chunk(oneChoice(EMPTY_DELTA, { enum: ['stop', 'tool_calls', 'length'] })),
  ChatErrorChunk: chunk(oneChoice(EMPTY_DELTA, { const: 'error' }), { error: ref('ErrorDetail') }),
  ChatFinalChunk: chunk(
    { type: 'array', maxItems: 0 },
    { session_id: SESSION_ID, usage: { ...nullable(ref('Usage')), description: '`null` after `tool_calls` or when the intern reported none.' } },
  ),
  ChatCompletionChunk: {
    oneOf: [
      ref('ChatRoleChunk'),
      ref('ChatContentChunk'),
      ref('ChatToolCallChunk'),
      ref('ChatFinishChunk'),
      ref('ChatErrorChunk'),
      ref('ChatFinalChunk'),
    ],
    description:
      'The `data` of one server-sent event. Order: a role chunk; content chunks; exactly one finish (`stop`; `length` when ' +
      'the run reached MAX_TOOL_CALLS_PER_RUN; `tool_calls` right after the tool call chunk; or an error chunk: 410 `run_ended`, 502 `stream_severed`, 500 `internal_error`); ' +
      'then the final chunk (`choices: []`, `session_id`, `usage`), then `data: [DONE]`.',
  },
};

const ERROR_SCHEMAS: Record<string, JsonSchema> = {
  ErrorReason: { type: 'string', enum: Object.keys(ERROR_REASONS) },
  ErrorDetail: strictObject({
    code: { type: 'integer', description: 'The HTTP status.' },
    message: { type: 'string' },
    metadata: strictObject({ reason: ref('ErrorReason'), retryable: { type: 'boolean' } }),
  }),
  ApiError: { ...strictObject({ error: ref('ErrorDetail') }), description: 'The error envelope of the intern routes (every status but 401).' },
  Unauthenticated: {
    ...strictObject({ error: strictObject({ code: { const: 401 }, message: { type: 'string' } }) }),
    description: '401 carries no `metadata`.',
  },
  AnalyticsError: {
    ...strictObject({ error: strictObject({ code: { type: 'integer' }, message: { type: 'string' } }) }),
    description: 'Analytics routes answer errors without `metadata`.',
  },
};

const BASE64: JsonSchema = { type: 'string', pattern: '^[A-Za-z0-9+/]+={0,2}$' };

const DAEMON_SCHEMAS: Record<string, JsonSchema> = {
  DaemonAccess: strictObject({
    origin: { type: 'string', pattern: '^https://[^/]+$' },
    token: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
  }),
  DaemonSignRequest: {
    ...requestSchemaOf(signBodySchema),
    description: `\`bodySha256\` matches ${BODY_SHA256_PATTERN.source}; with \`route\` the answer adds the v2 signature and a single-use nonce.`,
  },
  DaemonSignature: {
    ...strictObject(
      {
        [INVOKE_HEADERS.signature]: { ...BASE64, description: 'Ed25519 over `v1\\n<intern_id>\\n<timestamp>\\n<user>\\n<bodySha256>`.' },
        [INVOKE_HEADERS.timestamp]: { type: 'string', pattern: '^[0-9]+$', description: 'Unix seconds.' },
        [INVOKE_HEADERS.user]: { ...NON_EMPTY_STRING, description: 'The member id.' },
        [INVOKE_HEADERS.signatureV2]: {
          ...BASE64,
          description: 'Ed25519 over `v2\\n<intern_id>\\n<timestamp>\\n<nonce>\\n<user>\\n<method>\\n<path>\\n<bodySha256>`.',
        },
        [INVOKE_HEADERS.nonce]: NON_EMPTY_STRING,
      },
      [INVOKE_HEADERS.signature, INVOKE_HEADERS.timestamp, INVOKE_HEADERS.user],
    ),
    dependentRequired: {
      [INVOKE_HEADERS.signatureV2]: [INVOKE_HEADERS.nonce],
      [INVOKE_HEADERS.nonce]: [INVOKE_HEADERS.signatureV2],
    },
    description: 'The v2 pair is present exactly when the request named a `route`.',
  },
  SigningJwk: strictObject({
    kty: { const: 'OKP' },
    crv: { const: 'Ed25519' },
    x: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
    kid: NON_EMPTY_STRING,
    alg: { const: 'EdDSA' },
    use: { const: 'sig' },
  }),
  SigningKeys: { ...strictObject({ keys: { type: 'array', minItems: 1, items: ref('SigningJwk') } }), description: 'A JWKS (RFC 7517).' },
};

const LABEL: JsonSchema = { type: 'string', pattern: TITLE_CASE_LABEL };
const DISPLAY_FORMATS = [...new Set(ANALYTICS_CATALOGUE.metrics.map((metric) => metric.display_format))];

const ANALYTICS_SCHEMAS: Record<string, JsonSchema> = {
  AnalyticsMeta: strictObject({
    data: strictObject({
      dimensions: { type: 'array', items: strictObject({ name: NON_EMPTY_STRING, display_label: LABEL }) },
      granularities: { type: 'array', items: strictObject({ name: NON_EMPTY_STRING, display_label: LABEL }) },
      metrics: {
        type: 'array',
        items: strictObject({
          name: NON_EMPTY_STRING,
          display_label: LABEL,
          is_rate: { type: 'boolean' },
          display_format: { enum: DISPLAY_FORMATS },
        }),
      },
      operators: { type: 'array', items: strictObject({ name: NON_EMPTY_STRING, value_type: { enum: ['scalar', 'array'] } }) },
    }),
  }),
};

const META_SCHEMAS: Record<string, JsonSchema> = {
  OpenApiDocument: {
    type: 'object',
    properties: { openapi: { const: '3.1.0' }, info: { type: 'object' }, paths: { type: 'object' } },
    required: ['openapi', 'info', 'paths'],
    description: 'This document.',
  },
};

export const OPENAPI_SCHEMAS: Record<string, JsonSchema> = {
  ...INTERN_SCHEMAS,
  ...CHAT_SCHEMAS,
  ...RUN_SCHEMAS,
  ...WEBHOOK_SCHEMAS,
  ...EVENT_SCHEMAS,
  ...VAULT_SCHEMAS,
  ...EGRESS_SCHEMAS,
  ...FILE_SCHEMAS,
  ...ERROR_SCHEMAS,
  ...DAEMON_SCHEMAS,
  ...ANALYTICS_SCHEMAS,
  ...ANALYTICS_QUERY_SCHEMAS,
  ...META_SCHEMAS,
};
