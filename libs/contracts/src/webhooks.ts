/**
 * Webhooks (CONTRACT section 13): the endpoint and delivery resources, the create body's rules, the requests
 * the gateway sends the webhooks service, and the payload built from an integration event.
 */
import { z } from 'zod';
import { DomainError } from './errors';
import { type IntegrationEventData, WEBHOOK_EVENT_TYPES } from './integration-events';
import type { RequestContext } from './principal';

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const MAX_WEBHOOK_URL_CHARS = 2048;
export const MAX_WEBHOOK_DESCRIPTION_CHARS = 500;
/** `GET /webhooks/{id}/deliveries` answers the newest deliveries, at most this many. */
export const WEBHOOK_DELIVERIES_LOG_LIMIT = 100;

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** An endpoint as listed (the secret is answered by the create only). */
export interface WebhookEndpoint {
  id: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  created_at: string;
}

export interface CreatedWebhookEndpoint extends WebhookEndpoint {
  /** `whsec_` + base64 of 32 random bytes: signs every delivery to this endpoint. */
  secret: string;
}

export interface WebhookEndpointList {
  data: WebhookEndpoint[];
}

/**
 * One event's delivery to one endpoint. Its `id` is the event's id, which is also the `webhook-id` header of
 * every attempt, so a receiver's log and this one match (unique within one endpoint's deliveries).
 */
export interface WebhookDelivery {
  id: string;
  event_type: WebhookEventType;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export interface WebhookDeliveryList {
  data: WebhookDelivery[];
}

export interface CreateWebhookBody {
  url: string;
  events: WebhookEventType[];
  description?: string | null;
}

export interface CreateWebhookRequest {
  context: RequestContext;
  body: CreateWebhookBody;
}

export interface ListWebhooksRequest {
  context: RequestContext;
}

/** Delete and deliveries: one endpoint of the caller's workspace. */
export interface WebhookEndpointRequest {
  context: RequestContext;
  endpointId: string;
}

const webhookUrl = z
  .string()
  .max(MAX_WEBHOOK_URL_CHARS, `url must be at most ${MAX_WEBHOOK_URL_CHARS} characters`)
  .refine(isHttpUrlWithoutCredentials, 'url must be an absolute http(s) URL without user name or password');

export const createWebhookSchema = z.strictObject({
  url: webhookUrl,
  events: z
    .array(z.enum(WEBHOOK_EVENT_TYPES), `events must be a list of ${WEBHOOK_EVENT_TYPES.join(', ')}`)
    .min(1, 'events must name at least one event type')
    .refine((events) => new Set(events).size === events.length, 'events must not repeat a type'),
  description: z
    .string()
    .max(MAX_WEBHOOK_DESCRIPTION_CHARS, `description must be at most ${MAX_WEBHOOK_DESCRIPTION_CHARS} characters`)
    .nullable()
    .optional(),
});

/**
 * The shape of a create body (400 `invalid_body` otherwise). Whether the URL may be called (https, no private
 * address after DNS resolution) is the webhooks service's to judge: it resolves the name where it connects.
 */
export function parseCreateWebhookBody(value: unknown): CreateWebhookBody {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_body', 'body must be a JSON object');
  }
  const result = createWebhookSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue?.code === 'unrecognized_keys') throw new DomainError('invalid_body', `unknown field: ${issue.keys.join(', ')}`);
  const path = issue?.path.join('.') ?? '';
  throw new DomainError('invalid_body', issue === undefined ? 'invalid body' : path === '' ? issue.message : `${path}: ${issue.message}`);
}

function isHttpUrlWithoutCredentials(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.username === '' && url.password === '' && url.hostname !== '';
}

/**
 * The keys of each webhook type's `data`, exactly CONTRACT section 13's. Anything else an integration event
 * carries (run.failed's `error`, or a field a later version adds) stays out of the payload.
 */
export const WEBHOOK_DATA_KEYS = {
  'intern.status_changed': ['intern_id', 'status', 'previous_status', 'progress'],
  'run.completed': ['intern_id', 'run_id', 'session_id', 'origin', 'finish_reason', 'usage'],
  'run.failed': ['intern_id', 'run_id', 'session_id', 'origin', 'finish_reason', 'usage'],
  'question.opened': ['intern_id', 'run_id', 'session_id', 'tool_call_id', 'arguments', 'expires_at'],
} as const satisfies { [T in WebhookEventType]: readonly (keyof IntegrationEventData[T])[] };

/** The JSON body of a delivery. */
export interface WebhookPayload {
  /** The integration event's id: the `webhook-id` header too. */
  id: string;
  type: WebhookEventType;
  created_at: string;
  workspace_id: string;
  data: Record<string, unknown>;
}

export function isWebhookEventType(type: string): type is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type);
}

/** The payload of one event: the envelope's id, type and time, the workspace, and the contract's keys of `data`. */
export function webhookPayloadOf(
  event: { id: string; type: WebhookEventType; created_at: string; data: Record<string, unknown> },
  workspaceId: string,
): WebhookPayload {
  const data: Record<string, unknown> = {};
  for (const key of WEBHOOK_DATA_KEYS[event.type]) data[key] = event.data[key] ?? null;
  return { id: event.id, type: event.type, created_at: event.created_at, workspace_id: workspaceId, data };
}
