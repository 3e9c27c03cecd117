import { type IntegrationEventSource, MalformedEventError, type ReceivedIntegrationEvent } from '@interns/contracts';

export { MalformedEventError, parseIntegrationEvent } from '@interns/contracts';

// Beside the appliers, which read every event through it; the consumers in integration-events/ only parse and hand on.

/** A service whose integration events analytics consumes (one JetStream stream each). */
export type EventSource = IntegrationEventSource;
/** An integration event as received: its envelope checked, its data read by the applier of its type (EventData). */
export type ReceivedEvent = ReceivedIntegrationEvent;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
