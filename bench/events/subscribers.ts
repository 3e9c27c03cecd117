import { performance } from 'node:perf_hooks';
import { type HeldResponse, holdResponse } from '../shared/held-response';
import { openConcurrently } from '../shared/open-concurrently';
import { createParser } from 'eventsource-parser';

/**
 * The client side of the events benchmark: many subscribers of one SSE event stream (`GET`), each on a socket of
 * its own and with a parser of its own (eventsource-parser, as the console's EventSource would parse), noting
 * when each event reached each of them. Arrival is read when the socket's bytes are handed over, before parsing.
 */

const OPEN_TIMEOUT_MS = 60_000;

export interface SubscriberTarget {
  url: string;
  headers: Record<string, string>;
}

/** When each subscriber received one event: `performance.now()` of each arrival, and the event's own time. */
export interface Delivery {
  /** The event's `created_at`, ms since the epoch (1 ms resolution, as it is written). */
  createdAtMs: number;
  arrivals: number[];
}

/**
 * Every event the subscribers received, by key (`<type>:<data.intern_id>`), and waits for an event to have
 * reached a number of them. An event's `data:` is the same text for every subscriber: its JSON is read once,
 * by event id, so 1000 subscribers do not cost the bench process 1000 parses (that would be counted as delay).
 */
export class Arrivals {
  private readonly deliveries = new Map<string, Delivery>();
  private readonly keysById = new Map<string, { key: string; createdAtMs: number } | null>();
  private readonly waiters = new Map<string, { count: number; done: () => void }>();

  record(eventId: string | undefined, data: string, at: number): void {
    const id = eventId ?? data;
    let known = this.keysById.get(id);
    if (known === undefined) {
      known = keyOf(data);
      this.keysById.set(id, known);
    }
    if (known === null) return;
    let delivery = this.deliveries.get(known.key);
    if (delivery === undefined) this.deliveries.set(known.key, (delivery = { createdAtMs: known.createdAtMs, arrivals: [] }));
    delivery.arrivals.push(at);
    const waiter = this.waiters.get(known.key);
    if (waiter !== undefined && delivery.arrivals.length >= waiter.count) waiter.done();
  }

  /** The event `key` once `count` subscribers have it, or as far as it got after `timeoutMs` (null: none at all). */
  async waitFor(key: string, count: number, timeoutMs: number): Promise<Delivery | null> {
    const got = this.deliveries.get(key);
    if (got === undefined || got.arrivals.length < count) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.waiters.set(key, {
          count,
          done: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
      this.waiters.delete(key);
    }
    return this.deliveries.get(key) ?? null;
  }
}

/** `intern.created:<intern id>` of a workspace event's `data:` line; null for what is not one (nothing waits for it). */
function keyOf(data: string): { key: string; createdAtMs: number } | null {
  try {
    const event = JSON.parse(data) as { type?: unknown; created_at?: unknown; data?: { intern_id?: unknown } };
    if (typeof event.type !== 'string' || typeof event.created_at !== 'string' || typeof event.data?.intern_id !== 'string') return null;
    return { key: `${event.type}:${event.data.intern_id}`, createdAtMs: Date.parse(event.created_at) };
  } catch {
    return null;
  }
}

/** One subscriber, held open. */
export type Subscriber = HeldResponse;

/** Opens one subscriber: resolves once the stream's head (200) arrived, from when on it is following. */
export function openSubscriber(target: SubscriberTarget, arrivals: Arrivals): Promise<Subscriber> {
  const request = { url: target.url, method: 'GET' as const, headers: { accept: 'text/event-stream', ...target.headers }, timeoutMs: OPEN_TIMEOUT_MS, label: 'a subscriber' };
  return holdResponse(request, (incoming, opened) => {
    // The time the bytes being parsed arrived: every event parsed from one read arrived then.
    let receivedAt = 0;
    const parser = createParser({ onEvent: (event) => arrivals.record(event.id, event.data, receivedAt) });
    incoming.on('data', (part: string) => {
      receivedAt = performance.now();
      parser.feed(part);
    });
    opened();
  });
}

/**
 * Opens `count` subscribers, at most `concurrency` being opened at once. The first failure stops the opening;
 * those opened so far are closed and the failure is thrown. `signal` stops it the same way.
 */
export async function openSubscribers(
  target: SubscriberTarget,
  arrivals: Arrivals,
  count: number,
  concurrency: number,
  signal: AbortSignal,
): Promise<{ subscribers: Subscriber[]; elapsedMs: number }> {
  const { opened, elapsedMs } = await openConcurrently(count, concurrency, signal, () => openSubscriber(target, arrivals));
  return { subscribers: opened, elapsedMs };
}

export { closeAll } from '../shared/open-concurrently';
