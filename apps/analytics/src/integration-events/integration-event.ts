import type { RelayedEventMessage } from '@interns/event-store';

/** The services whose integration events analytics consumes. */
export const EVENT_SOURCES = ['lifecycle', 'runs'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/** An integration event as the outbox relays publish it (`libs/event-store` RelayedEventMessage). */
export type IntegrationEvent = RelayedEventMessage;

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
export function parseIntegrationEvent(payload: Uint8Array): IntegrationEvent {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new MalformedEventError('message is not JSON');
  }
  if (!isRecord(value)) throw new MalformedEventError('message is not a JSON object');
  const { event_id, type, stream_id, stream_version, data, created_at } = value;
  if (typeof event_id !== 'string' || !UUID.test(event_id)) throw new MalformedEventError('event_id is not a uuid');
  if (typeof type !== 'string' || type.length === 0) throw new MalformedEventError(`event ${event_id}: no type`);
  if (typeof stream_id !== 'string') throw new MalformedEventError(`event ${event_id}: no stream_id`);
  if (!Number.isInteger(stream_version)) throw new MalformedEventError(`event ${event_id}: no stream_version`);
  if (!isRecord(data)) throw new MalformedEventError(`event ${event_id}: data is not an object`);
  if (typeof created_at !== 'string' || Number.isNaN(Date.parse(created_at))) {
    throw new MalformedEventError(`event ${event_id}: created_at is not a time`);
  }
  return value as unknown as IntegrationEvent;
}

/**
 * Typed reads of an event's `data`. Analytics keeps its own view of the producers' event shapes (a service
 * never imports another service's domain lib), so each read checks what it relies on.
 */
export class EventData {
  constructor(private readonly event: IntegrationEvent) {}

  private fail(key: string, expected: string): never {
    throw new MalformedEventError(`${this.event.type} ${this.event.event_id}: data.${key} is not ${expected}`);
  }

  has(key: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.event.data, key);
  }

  string(key: string): string {
    const value = this.event.data[key];
    return typeof value === 'string' ? value : this.fail(key, 'a string');
  }

  nullableString(key: string): string | null {
    const value = this.event.data[key];
    if (value === null || value === undefined) return null;
    return typeof value === 'string' ? value : this.fail(key, 'a string or null');
  }

  integer(key: string): number {
    const value = this.event.data[key];
    return Number.isInteger(value) ? (value as number) : this.fail(key, 'an integer');
  }

  record(key: string): EventData {
    const value = this.event.data[key];
    if (!isRecord(value)) return this.fail(key, 'an object');
    return new EventData({ ...this.event, data: value });
  }

  nullableRecord(key: string): EventData | null {
    const value = this.event.data[key];
    return value === null || value === undefined ? null : this.record(key);
  }

  /** `data.at` when the event carries it (all of today's do), else when it was stored. */
  at(): string {
    const value = this.event.data.at;
    return typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? value : this.event.created_at;
  }
}
