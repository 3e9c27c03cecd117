import { INTEGRATION_EVENT_SOURCES } from './nats-permissions';

/** A service whose integration events others consume (one JetStream stream each). */
export type IntegrationEventSource = (typeof INTEGRATION_EVENT_SOURCES)[number];

/**
 * An integration event as a consumer receives it (the IntegrationEvent envelope). Only the envelope is checked
 * here; each consumer reads the `data` of the types it uses and checks what it relies on, since another build
 * may send other shapes.
 */
export interface ReceivedIntegrationEvent {
  id: string;
  type: string;
  version: number;
  created_at: string;
  workspace_id: string | null;
  sequence: number;
  /** The request that caused it (null when a publisher sent none). */
  correlation_id: string | null;
  data: Record<string, unknown>;
}

/** A message or event field that can never be used, however often it is redelivered. */
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

/** Checks the envelope of a received message (MalformedEventError when it is none). */
export function parseIntegrationEvent(payload: Uint8Array): ReceivedIntegrationEvent {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new MalformedEventError('message is not JSON');
  }
  if (!isRecord(value)) throw new MalformedEventError('message is not a JSON object');
  const { id, type, version, created_at, workspace_id, sequence, correlation_id, data } = value;
  if (typeof id !== 'string' || !UUID.test(id)) throw new MalformedEventError('id is not a uuid');
  if (typeof type !== 'string' || type.length === 0) throw new MalformedEventError(`event ${id}: no type`);
  if (!Number.isInteger(version)) throw new MalformedEventError(`event ${id}: no version`);
  if (typeof created_at !== 'string' || Number.isNaN(Date.parse(created_at))) {
    throw new MalformedEventError(`event ${id}: created_at is not a time`);
  }
  if (workspace_id !== null && typeof workspace_id !== 'string') throw new MalformedEventError(`event ${id}: bad workspace_id`);
  if (!Number.isInteger(sequence)) throw new MalformedEventError(`event ${id}: no sequence`);
  if (!isRecord(data)) throw new MalformedEventError(`event ${id}: data is not an object`);
  return {
    id: id.toLowerCase(),
    type,
    version: version as number,
    created_at,
    workspace_id,
    sequence: sequence as number,
    correlation_id: typeof correlation_id === 'string' ? correlation_id : null,
    data,
  };
}
