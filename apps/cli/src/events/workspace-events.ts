/**
 * The client of `GET /api/v1/events` (interface section 23): the workspace's integration events as server-sent
 * events (`event: <type>`, `id: <event id>`, data the webhook payload `{"id","type","created_at","workspace_id",
 * "data"}`). A dropped or silent link is opened again with `Last-Event-ID`, so nothing is missed within the
 * API's replay window; refusals that will not change (401, 403, 404, 400) end it.
 */
import { ApiError } from '../errors';
import { bodyOf, type ApiClient } from '../http/api-client';
import { readSse, type SseEvent } from '../http/sse-reader';

export interface WorkspaceEvent {
  id: string;
  type: string;
  created_at: string;
  workspace_id: string | null;
  data: Record<string, unknown>;
}

export interface FollowEventsOptions {
  /** Resume after this event (sent as Last-Event-ID on the first request too). */
  lastEventId?: string;
  signal: AbortSignal;
  onEvent: (event: WorkspaceEvent) => void | Promise<void>;
  /** Told before each reconnect (why, and the delay). */
  onReconnect?: (why: string, delayMs: number) => void;
  /** Silence (no event, no keepalive) after which the link counts as dead. */
  idleMs?: number;
  /** Delays between reconnects: 1 s doubling to this. */
  maxBackoffMs?: number;
}

export const EVENTS_PATH = '/events';

/** One SSE event of the events route as a WorkspaceEvent; null for anything else (a comment-only or unknown frame). */
export function parseWorkspaceEvent(event: SseEvent): WorkspaceEvent | null {
  let payload: unknown;
  try {
    payload = JSON.parse(event.data);
  } catch {
    return null;
  }
  if (typeof payload !== 'object' || payload === null) return null;
  const { id, type, created_at, workspace_id, data } = payload as Record<string, unknown>;
  const eventId = typeof id === 'string' ? id : event.id;
  const eventType = typeof type === 'string' ? type : event.event;
  if (eventId === undefined || eventType === undefined || typeof data !== 'object' || data === null) return null;
  return {
    id: eventId,
    type: eventType,
    created_at: typeof created_at === 'string' ? created_at : '',
    workspace_id: typeof workspace_id === 'string' ? workspace_id : null,
    data: data as Record<string, unknown>,
  };
}

/** Follows the events until `signal` aborts (resolves) or a lasting refusal (throws). */
export async function followWorkspaceEvents(client: ApiClient, options: FollowEventsOptions): Promise<void> {
  let lastEventId = options.lastEventId;
  let failures = 0;
  const maxBackoffMs = options.maxBackoffMs ?? 15_000;
  while (!options.signal.aborted) {
    let why: string;
    try {
      const response = await client.send('GET', EVENTS_PATH, {
        headers: { accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
        stream: true,
        signal: options.signal,
      });
      for await (const sse of readSse(bodyOf(response), { idleMs: options.idleMs })) {
        const event = parseWorkspaceEvent(sse);
        if (event === null) continue;
        failures = 0;
        lastEventId = event.id;
        await options.onEvent(event);
      }
      why = 'the stream ended';
    } catch (error) {
      if (options.signal.aborted) return;
      if (error instanceof ApiError && !isPassing(error)) throw error;
      why = error instanceof Error ? error.message : String(error);
    }
    if (options.signal.aborted) return;
    const delayMs = Math.min(maxBackoffMs, 1000 * 2 ** Math.min(failures, 10));
    failures++;
    options.onReconnect?.(why, delayMs);
    await sleep(delayMs, options.signal);
  }
}

/** A refusal worth trying again: rate limits, timeouts, server errors. */
function isPassing(error: ApiError): boolean {
  return error.status === 408 || error.status === 429 || error.status >= 500;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
