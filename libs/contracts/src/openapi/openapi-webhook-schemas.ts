/**
 * `components.schemas` of webhooks (CONTRACT section 13): the endpoint (as listed and as created, with its
 * one-time secret), the deliveries log, the delivery payload of each event type, and the create body (from the
 * zod schema the gateway parses it with). As strict as the rest of the document.
 */
import { WEBHOOK_EVENT_TYPES } from '../integration-events';
import { RUN_ORIGINS } from '../runs';
import { createWebhookSchema, MAX_WEBHOOK_DESCRIPTION_CHARS, WEBHOOK_DELIVERIES_LOG_LIMIT, WEBHOOK_DELIVERY_STATUSES } from '../webhooks';
import { JsonSchema, NON_EMPTY_STRING, nullable, ref, requestSchemaOf, SESSION_ID, strictObject, TIMESTAMP, UUID_SCHEMA } from './json-schema';

const ENDPOINT_PROPERTIES: Record<string, JsonSchema> = {
  id: UUID_SCHEMA,
  url: { type: 'string', format: 'uri' },
  events: { type: 'array', minItems: 1, uniqueItems: true, items: ref('WebhookEventType') },
  description: nullable({ type: 'string', maxLength: MAX_WEBHOOK_DESCRIPTION_CHARS }),
  created_at: TIMESTAMP,
};

/** The run an event is about, and how it ended (shared with the workspace event stream's schemas). */
export const RUN_REF: Record<string, JsonSchema> = { intern_id: UUID_SCHEMA, run_id: UUID_SCHEMA, session_id: SESSION_ID };
export const RUN_ENDING: Record<string, JsonSchema> = { ...RUN_REF, origin: { enum: [...RUN_ORIGINS] }, usage: nullable(ref('Usage')) };

/** A delivery's body for one event type: the envelope of CONTRACT section 13 and that type's `data`. */
function payloadOf(type: string, data: JsonSchema): JsonSchema {
  return strictObject({
    id: { ...UUID_SCHEMA, description: 'The event id: also the `webhook-id` header, the same on every retry.' },
    type: { const: type },
    created_at: { ...TIMESTAMP, description: 'When the event happened.' },
    workspace_id: UUID_SCHEMA,
    data,
  });
}

export const WEBHOOK_SCHEMAS: Record<string, JsonSchema> = {
  WebhookEventType: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] },
  CreateWebhookRequest: {
    ...requestSchemaOf(createWebhookSchema),
    description:
      '`url`: `https://` whose host resolves only to public addresses (not loopback, private, link-local, unique-local, ' +
      'carrier-grade NAT, reserved or metadata), checked at creation and again before every delivery; with ' +
      '`WEBHOOK_ALLOW_INSECURE=true` (development and tests) `http://` and any address are accepted. A workspace has at ' +
      'most `WEBHOOK_ENDPOINTS_PER_WORKSPACE` (20) endpoints; beyond: 400.',
  },
  WebhookEndpoint: { ...strictObject(ENDPOINT_PROPERTIES), description: 'An endpoint of the workspace; its secret is not shown again.' },
  CreatedWebhookEndpoint: {
    ...strictObject({
      ...ENDPOINT_PROPERTIES,
      secret: {
        type: 'string',
        pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
        description: 'Signs every delivery (Standard Webhooks, HMAC-SHA256 keyed with the base64-decoded part after `whsec_`). Only in this answer.',
      },
    }),
  },
  WebhookEndpointList: strictObject({ data: { type: 'array', items: ref('WebhookEndpoint') } }),
  WebhookDelivery: {
    ...strictObject({
      id: { ...UUID_SCHEMA, description: 'The event id, i.e. the `webhook-id` the endpoint received.' },
      event_type: ref('WebhookEventType'),
      status: { enum: [...WEBHOOK_DELIVERY_STATUSES] },
      attempts: { type: 'integer', minimum: 0 },
      last_status_code: nullable({ type: 'integer' }),
      last_error: nullable({ type: 'string' }),
      created_at: TIMESTAMP,
      delivered_at: nullable(TIMESTAMP),
    }),
  },
  WebhookDeliveryList: {
    ...strictObject({ data: { type: 'array', items: ref('WebhookDelivery') } }),
    description: `Newest first, at most ${WEBHOOK_DELIVERIES_LOG_LIMIT}.`,
  },
  WebhookDeleted: strictObject({ deleted: { const: true } }),
  WebhookPayload: {
    description:
      'The JSON body POSTed to an endpoint, with the headers `webhook-id`, `webhook-timestamp` (unix seconds) and ' +
      '`webhook-signature` (`v1,<base64 HMAC-SHA256 over "<id>.<timestamp>.<body>">`).',
    oneOf: [
      payloadOf(
        'intern.status_changed',
        strictObject({
          intern_id: UUID_SCHEMA,
          status: ref('InternStatus'),
          previous_status: nullable(ref('InternStatus')),
          progress: nullable(ref('InternProgress')),
        }),
      ),
      payloadOf('run.completed', strictObject({ ...RUN_ENDING, finish_reason: { enum: ['stop', 'length'] } })),
      payloadOf('run.failed', strictObject({ ...RUN_ENDING, finish_reason: { const: 'error' } })),
      payloadOf(
        'question.opened',
        strictObject({ ...RUN_REF, tool_call_id: NON_EMPTY_STRING, arguments: ref('ProvideInputArguments'), expires_at: TIMESTAMP }),
      ),
    ],
  },
};
