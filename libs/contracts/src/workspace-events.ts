/**
 * The workspace event stream (`GET /events`, interface section 23): a workspace's integration events as they
 * happen, as server-sent events (`id: <event id>`, `event: <type>`, `data: <payload>`). The payload is
 * CONTRACT section 13's for the four webhook types; the other integration event types carry their `data` as
 * published (`INTEGRATION_EVENT_TYPES` lists them).
 */
import { INTEGRATION_EVENT_TYPES, type IntegrationEventType, isIntegrationEventType } from './integration-events';
import type { ReceivedIntegrationEvent } from './integration-event-envelope';
import { isWebhookEventType, webhookPayloadOf } from './webhooks';

/** Where the route is served, relative to `API_BASE_PATH`. */
export const WORKSPACE_EVENTS_PATH = '/events';

/** One event as the stream's `data:` carries it. */
export interface WorkspaceEvent {
  id: string;
  type: IntegrationEventType;
  created_at: string;
  workspace_id: string;
  data: Record<string, unknown>;
}

/**
 * The payload of a received integration event for its workspace; null for a type this build does not know, or a
 * newer version of one (a replica of a later build publishing: its shape may differ from what clients are told).
 */
export function workspaceEventOf(event: ReceivedIntegrationEvent, workspaceId: string): WorkspaceEvent | null {
  const { type } = event;
  if (!isIntegrationEventType(type) || event.version > INTEGRATION_EVENT_TYPES[type].version) return null;
  if (isWebhookEventType(type)) return webhookPayloadOf({ ...event, type }, workspaceId);
  return { id: event.id, type, created_at: event.created_at, workspace_id: workspaceId, data: event.data };
}
