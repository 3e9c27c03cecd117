/**
 * `components.schemas` of the workspace event stream (interface section 23): one event as its `data:` line carries
 * it. The four webhook types are the webhook payloads of CONTRACT section 13; the other integration event types
 * carry their `data` as published.
 */
import { APPROVAL_MODES } from '../chat';
import { RUN_ORIGINS } from '../runs';
import { JsonSchema, nullable, ref, strictObject, TIMESTAMP, UUID_SCHEMA } from './json-schema';
import { RUN_ENDING, RUN_REF } from './openapi-webhook-schemas';

const TEXT: JsonSchema = { type: 'string' };

/** One event of a type beyond the webhook payloads: the same envelope, that type's `data`. */
function eventOf(type: string, data: JsonSchema): JsonSchema {
  return strictObject({ id: UUID_SCHEMA, type: { const: type }, created_at: TIMESTAMP, workspace_id: UUID_SCHEMA, data });
}

const INTERN_FIELDS: Record<string, JsonSchema> = { intern_id: UUID_SCHEMA, name: TEXT, description: nullable(TEXT), model: nullable(TEXT) };

export const EVENT_SCHEMAS: Record<string, JsonSchema> = {
  WorkspaceEvent: {
    description:
      'One event of the workspace event stream (`data:`; its `event:` is `type`, its `id:` is `id`). The types webhooks ' +
      'deliver have their payload exactly; the others carry their `data` as the platform publishes it.',
    oneOf: [
      ref('WebhookPayload'),
      eventOf('intern.created', strictObject({ ...INTERN_FIELDS, organization_id: TEXT, workspace_id: UUID_SCHEMA, created_by: nullable(TEXT) })),
      eventOf('intern.updated', strictObject(INTERN_FIELDS)),
      eventOf('intern.deleted', strictObject({ intern_id: UUID_SCHEMA })),
      eventOf(
        'run.started',
        strictObject({
          ...RUN_REF,
          origin: { enum: [...RUN_ORIGINS] },
          user_id: { ...nullable(TEXT), description: 'The member who started it (user keys, OAuth); null for organization and intern keys.' },
          api_key_id: { ...nullable(TEXT), description: 'The organization or intern key that started it; null for members.' },
          model: TEXT,
          approval_mode: { enum: [...APPROVAL_MODES] },
        }),
      ),
      eventOf('run.prompt_joined', strictObject(RUN_REF)),
      eventOf('run.cancelled', strictObject({ ...RUN_ENDING, reason: { ...TEXT, description: 'Why it ended: e.g. `caller_cancelled`, `interaction_deadline`.' } })),
    ],
  },
  WorkspaceStreamEvent: {
    type: 'object',
    properties: {
      id: { ...UUID_SCHEMA, description: "The event's `id:` line: its event id (the `data`'s `id`), what `Last-Event-ID` resumes after." },
      event: { type: 'string', description: "The event's `event:` line: its type (the `data`'s `type`)." },
      data: ref('WorkspaceEvent'),
    },
    required: ['id', 'event', 'data'],
    additionalProperties: false,
    description:
      'One server-sent event of the workspace event stream (lines `id:`, `event:` and `data:`, then a blank line). ' +
      '`: keepalive` comments between events carry no event; the stream sends no end of its own.',
  },
};
