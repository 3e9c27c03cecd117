/** The services whose integration events analytics consumes (one JetStream stream each). */
export const EVENT_SOURCES = ['lifecycle', 'runs'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/**
 * An integration event as received (`libs/contracts` IntegrationEvent): the envelope is checked here, the
 * data by the applier of its type (see EventData), since analytics cannot trust another build's shapes.
 */
export interface ReceivedEvent {
  id: string;
  type: string;
  version: number;
  created_at: string;
  workspace_id: string | null;
  sequence: number;
  data: Record<string, unknown>;
}

/** A message or event field that can never be applied, however often it is redelivered. */
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

/** Checks the envelope only; the data of each event type is read by its applier (see EventData). */
export function parseIntegrationEvent(payload: Uint8Array): ReceivedEvent {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new MalformedEventError('message is not JSON');
  }
  if (!isRecord(value)) throw new MalformedEventError('message is not a JSON object');
  const { id, type, version, created_at, workspace_id, sequence, data } = value;
  if (typeof id !== 'string' || !UUID.test(id)) throw new MalformedEventError('id is not a uuid');
  if (typeof type !== 'string' || type.length === 0) throw new MalformedEventError(`event ${id}: no type`);
  if (!Number.isInteger(version)) throw new MalformedEventError(`event ${id}: no version`);
  if (typeof created_at !== 'string' || Number.isNaN(Date.parse(created_at))) {
    throw new MalformedEventError(`event ${id}: created_at is not a time`);
  }
  if (workspace_id !== null && typeof workspace_id !== 'string') throw new MalformedEventError(`event ${id}: bad workspace_id`);
  if (!Number.isInteger(sequence)) throw new MalformedEventError(`event ${id}: no sequence`);
  if (!isRecord(data)) throw new MalformedEventError(`event ${id}: data is not an object`);
  return value as unknown as ReceivedEvent;
}

/** Typed reads of an event's `data` (or of an object inside it), each checking what it relies on. */
export class EventData {
  constructor(
    private readonly event: Pick<ReceivedEvent, 'id' | 'type'>,
    private readonly data: Record<string, unknown>,
    private readonly path = 'data',
  ) {}

  static of(event: ReceivedEvent): EventData {
    return new EventData(event, event.data);
  }

  private fail(key: string, expected: string): never {
    throw new MalformedEventError(`${this.event.type} ${this.event.id}: ${this.path}.${key} is not ${expected}`);
  }

  string(key: string): string {
    const value = this.data[key];
    return typeof value === 'string' ? value : this.fail(key, 'a string');
  }

  nullableString(key: string): string | null {
    const value = this.data[key];
    if (value === null || value === undefined) return null;
    return typeof value === 'string' ? value : this.fail(key, 'a string or null');
  }

  integer(key: string): number {
    const value = this.data[key];
    return Number.isInteger(value) ? (value as number) : this.fail(key, 'an integer');
  }

  record(key: string): EventData {
    const value = this.data[key];
    return isRecord(value) ? new EventData(this.event, value, `${this.path}.${key}`) : this.fail(key, 'an object');
  }

  nullableRecord(key: string): EventData | null {
    const value = this.data[key];
    return value === null || value === undefined ? null : this.record(key);
  }
}
