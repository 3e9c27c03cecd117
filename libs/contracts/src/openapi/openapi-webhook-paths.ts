/**
 * The operations of webhooks (CONTRACT section 13), one path item per route (paths relative to `API_BASE_PATH`):
 * a workspace's endpoints and one endpoint's deliveries log. Credentials: user and organization keys and OAuth
 * tokens with `interns`; management and intern keys are refused with 403. Everything is per workspace: another
 * workspace's endpoint does not exist (404).
 */
import { ref } from './json-schema';
import { BODY_RULES, NO_BODY, NO_BODY_RULES, OpenApiParameter, OpenApiPathItem, SecurityRequirement, SERVICE_FAILURES } from './openapi-operation';
import { errorResponses, jsonResponse, OpenApiResponses } from './openapi-responses';
import { UUID_SCHEMA } from './json-schema';

export const WEBHOOK_SECURITY: SecurityRequirement[] = [{ apiKey: ['user', 'organization'] }, { oauthToken: ['interns'] }];

const WEBHOOK_ID: OpenApiParameter = {
  name: 'webhook_id',
  in: 'path',
  required: true,
  description: "An endpoint of the credential's workspace; anything else (another workspace's, deleted, not a uuid): 404.",
  schema: UUID_SCHEMA,
};

/** Intern routes' refusals, with 403 for management and intern keys (and no lifecycle-writes check). */
function webhookErrors(...reasons: Parameters<typeof errorResponses>[0]): OpenApiResponses {
  const responses = errorResponses(['forbidden', 'insufficient_scope', 'not_found', ...reasons, ...SERVICE_FAILURES]);
  responses['401'] = { ...responses['401'], description: 'Credential missing, unknown, disabled or expired: `invalid or missing API key`, no `metadata`.' };
  responses['403'] = {
    ...responses['403'],
    description: `${responses['403'].description} Also \`forbidden\` for management and intern keys, which cannot manage webhooks.`,
  };
  return responses;
}

export const webhooks: OpenApiPathItem = {
  get: {
    operationId: 'listWebhooks',
    tags: ['Webhooks'],
    summary: "List the workspace's webhook endpoints",
    description: 'Newest first, without their secrets.',
    security: WEBHOOK_SECURITY,
    responses: {
      '200': jsonResponse("The workspace's endpoints.", ref('WebhookEndpointList')),
      ...webhookErrors(),
    },
  },
  post: {
    operationId: 'createWebhook',
    tags: ['Webhooks'],
    summary: 'Create a webhook endpoint; its signing secret is answered once',
    description:
      'Events of the workspace of the types listed are delivered to `url` as a `WebhookPayload` (Standard Webhooks ' +
      'signature; a 2xx within `WEBHOOK_TIMEOUT_MS` counts as delivered, else retried on `WEBHOOK_RETRY_SCHEDULE_MS`, ' +
      'then `failed`). At least once; the same `webhook-id` on every retry.',
    security: WEBHOOK_SECURITY,
    requestBody: { required: true, content: { 'application/json': { schema: ref('CreateWebhookRequest') } } },
    responses: {
      '201': jsonResponse('Created, with its secret.', ref('CreatedWebhookEndpoint')),
      ...webhookErrors(...BODY_RULES),
    },
  },
};

export const oneWebhook: OpenApiPathItem = {
  parameters: [WEBHOOK_ID],
  delete: {
    operationId: 'deleteWebhook',
    tags: ['Webhooks'],
    summary: 'Delete an endpoint: nothing more is delivered to it',
    description: 'Its pending deliveries are dropped with it; an attempt already in flight may still arrive.',
    security: WEBHOOK_SECURITY,
    requestBody: NO_BODY,
    responses: {
      '202': jsonResponse('Deleted.', ref('WebhookDeleted')),
      ...webhookErrors(...NO_BODY_RULES),
    },
  },
};

export const webhookDeliveries: OpenApiPathItem = {
  parameters: [WEBHOOK_ID],
  get: {
    operationId: 'listWebhookDeliveries',
    tags: ['Webhooks'],
    summary: "An endpoint's deliveries log",
    description: 'One entry per event delivered to the endpoint (its id is the event id, the `webhook-id` sent), newest first.',
    security: WEBHOOK_SECURITY,
    responses: {
      '200': jsonResponse('The newest deliveries.', ref('WebhookDeliveryList')),
      ...webhookErrors(),
    },
  },
};
