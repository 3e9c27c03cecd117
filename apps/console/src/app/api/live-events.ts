import { ApiError } from './api-error';
import type { ApiClient } from './client';
import { readEventStream } from './sse';

/** An integration event as `GET /api/v1/events` sends it (interface sections 13 and 23). */
export interface LiveEvent {
  id: string;
  type: string;
  created_at?: string;
  data: Record<string, unknown>;
}

export type LiveStatus = 'connecting' | 'live' | 'reconnecting' | 'unavailable';

export interface LiveEventHandlers {
  onEvent(event: LiveEvent): void;
  onStatus(status: LiveStatus, detail?: string): void;
  /** After a reconnection: events may have been missed beyond the replay window, so lists are read again once. */
  onResumed(): void;
}

const FIRST_RETRY_MS = 1_000;
const LAST_RETRY_MS = 30_000;
/** A gateway without the route (or a credential refused it) is asked again this rarely. */
const UNAVAILABLE_RETRY_MS = 60_000;

/** The event a `data:` line holds: its type from `event:` or the payload. */
export function liveEventOf(type: string | undefined, id: string | undefined, data: string): LiveEvent | null {
  try {
    const payload = JSON.parse(data) as { id?: string; type?: string; created_at?: string; data?: Record<string, unknown> };
    const eventType = type ?? payload.type;
    if (eventType === undefined || payload.data === undefined) return null;
    return { id: id ?? payload.id ?? '', type: eventType, created_at: payload.created_at, data: payload.data };
  } catch {
    return null;
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      done();
    });
  });
}

/**
 * Follows the workspace's events until `signal` aborts: fetch streaming (an Authorization header, which EventSource
 * cannot send), resumed with `Last-Event-ID` after a drop, reconnecting with a doubling delay (1 s to 30 s, jittered).
 */
export async function followLiveEvents(client: ApiClient, handlers: LiveEventHandlers, signal: AbortSignal): Promise<void> {
  let lastEventId: string | null = null;
  let retryMs = FIRST_RETRY_MS;
  let connectedBefore = false;
  while (!signal.aborted) {
    handlers.onStatus(connectedBefore ? 'reconnecting' : 'connecting');
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastEventId !== null) headers['last-event-id'] = lastEventId;
      const response = await client.stream('/events', { headers, signal });
      handlers.onStatus('live');
      if (connectedBefore) handlers.onResumed();
      connectedBefore = true;
      retryMs = FIRST_RETRY_MS;
      await readEventStream(response, (message) => {
        if (message.id !== undefined) lastEventId = message.id;
        const event = liveEventOf(message.event, message.id, message.data);
        if (event !== null) handlers.onEvent(event);
      });
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && lastEventId !== null && (error.status === 410 || error.status === 400)) {
        // The resume point is past the replay window (410 events_expired): read the current state, follow from now.
        lastEventId = null;
        handlers.onResumed();
        continue;
      }
      if (error instanceof ApiError && error.status !== 408 && error.status < 500 && error.status !== 429) {
        handlers.onStatus('unavailable', error.message);
        await pause(UNAVAILABLE_RETRY_MS, signal);
        continue;
      }
    }
    if (signal.aborted) return;
    await pause(retryMs * (0.5 + Math.random() / 2), signal);
    retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
  }
}
