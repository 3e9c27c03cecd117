/**
 * Server-sent events off a response body, parsed by eventsource-parser: every event with its `id:` and
 * `event:` fields. The API writes a `: keepalive` comment after 30 s of silence (KEEPALIVE_INTERVAL_MS), so a
 * body that sends nothing at all for `idleMs` is a dead link: the reader ends with StreamIdleError rather
 * than hanging.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export type SseEvent = EventSourceMessage;

/** Three missed keepalives at the API's default interval. */
export const SSE_IDLE_MS = 95_000;

export class StreamIdleError extends Error {
  constructor(idleMs: number) {
    super(`the stream sent nothing for ${Math.round(idleMs / 1000)} s`);
    this.name = 'StreamIdleError';
  }
}

/** Yields the events of `body` as they arrive; stops at its end. Breaking out of the loop closes the body. */
export async function* readSse(body: ReadableStream<Uint8Array>, options: { idleMs?: number } = {}): AsyncGenerator<SseEvent> {
  const idleMs = options.idleMs ?? SSE_IDLE_MS;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const ready: SseEvent[] = [];
  const parser = createParser({ onEvent: (event) => ready.push(event) });
  try {
    for (;;) {
      const chunk = await withIdleLimit(reader.read(), idleMs);
      if (chunk.done) {
        parser.feed(decoder.decode());
        yield* ready.splice(0);
        return;
      }
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      // Taken out before yielding: the consumer may take its time (a prompt) while the next chunk waits.
      for (const event of ready.splice(0)) yield event;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function withIdleLimit<T>(read: Promise<T>, idleMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StreamIdleError(idleMs)), idleMs);
  });
  return Promise.race([read, idle]).finally(() => clearTimeout(timer));
}
