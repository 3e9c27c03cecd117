import type { StoredEvent } from './event.types';

/** Lifts `data` of one event type from `fromVersion` to `fromVersion + 1`. Must not mutate its input. */
export interface Upcaster {
  type: string;
  fromVersion: number;
  upcast(data: Record<string, unknown>): Record<string, unknown>;
}

export type UpcastFn = (event: StoredEvent) => StoredEvent;

/**
 * Builds the read-side upcasting function: applies every matching upcaster in turn (v1 -> v2 -> v3 ...)
 * and reports the resulting `schemaVersion`. Events without a matching upcaster pass through unchanged.
 */
export function upcasterChain(upcasters: readonly Upcaster[]): UpcastFn {
  const byKey = new Map<string, Upcaster>();
  for (const upcaster of upcasters) {
    if (!Number.isInteger(upcaster.fromVersion) || upcaster.fromVersion < 1) {
      throw new Error(`upcaster for "${upcaster.type}" has invalid fromVersion ${upcaster.fromVersion}`);
    }
    const key = `${upcaster.type}@${upcaster.fromVersion}`;
    if (byKey.has(key)) throw new Error(`two upcasters for "${upcaster.type}" from version ${upcaster.fromVersion}`);
    byKey.set(key, upcaster);
  }
  return (event) => {
    let { data, schemaVersion } = event;
    for (let next = byKey.get(`${event.type}@${schemaVersion}`); next; next = byKey.get(`${event.type}@${schemaVersion}`)) {
      data = next.upcast(data);
      schemaVersion += 1;
    }
    return schemaVersion === event.schemaVersion ? event : { ...event, data, schemaVersion };
  };
}
