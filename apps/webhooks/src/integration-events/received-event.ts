/** The services whose integration events webhooks consumes (one JetStream stream each). */
export const EVENT_SOURCES = ['lifecycle', 'runs'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/**
 * An integration event as received (`libs/contracts` IntegrationEvent). The envelope is checked here; the
 * `data` keys a payload takes are checked where the payload is built, since another build may send other shapes.
 */
export interface ReceivedEvent {
  id: string;
  type: string;
  version: number;
  created_at: string;
  workspace_id: string | null;
  data: Record<string, unknown>;
}

/** A message that is no integration event at all: no later version of this code could use it either. */
export class MalformedEventError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedEventError';
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function parseReceivedEvent(payload: Uint8Array): ReceivedEvent {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new MalformedEventError('message is not JSON');
  }
  if (!isRecord(value)) throw new MalformedEventError('message is not a JSON object');
  const { id, type, version, created_at, workspace_id, data } = value;
  if (typeof id !== 'string' || !UUID.test(id)) throw new MalformedEventError('id is not a uuid');
  if (typeof type !== 'string' || type.length === 0) throw new MalformedEventError(`event ${id}: no type`);
  if (!Number.isInteger(version)) throw new MalformedEventError(`event ${id}: no version`);
  if (typeof created_at !== 'string' || Number.isNaN(Date.parse(created_at))) {
    throw new MalformedEventError(`event ${id}: created_at is not a time`);
  }
  if (workspace_id !== null && typeof workspace_id !== 'string') throw new MalformedEventError(`event ${id}: bad workspace_id`);
  if (!isRecord(data)) throw new MalformedEventError(`event ${id}: data is not an object`);
  return { id: id.toLowerCase(), type, version: version as number, created_at, workspace_id, data };
}
