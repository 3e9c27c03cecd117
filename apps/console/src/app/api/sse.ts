import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** A stream silent for this long is dead: the gateway writes a keepalive after every 30 s of silence. */
export const STREAM_IDLE_TIMEOUT_MS = 75_000;

export type SseEvent = EventSourceMessage;

/** Raised when a stream stayed silent past its idle timeout. */
export class StreamIdleError extends Error {
  constructor() {
    super('the stream went silent');
    this.name = 'StreamIdleError';
  }
}

/**
 * Reads a `text/event-stream` body to its end, handing each event to `onEvent` in order. Fetch streaming rather than
 * EventSource, which cannot send an Authorization header. Resolves when the server ends the stream; rejects when the
 * request is aborted or when nothing (not even a keepalive comment) arrives for `idleTimeoutMs`.
 */
export async function readEventStream(
  response: Response,
  onEvent: (event: SseEvent) => void,
  idleTimeoutMs = STREAM_IDLE_TIMEOUT_MS,
): Promise<void> {
  if (response.body === null) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = createParser({ onEvent });
  let idle = false;
  let timer = setTimeout(onIdle, idleTimeoutMs);
  function onIdle(): void {
    idle = true;
    void reader.cancel();
  }
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      clearTimeout(timer);
      timer = setTimeout(onIdle, idleTimeoutMs);
      parser.feed(value);
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
  if (idle) throw new StreamIdleError();
}
