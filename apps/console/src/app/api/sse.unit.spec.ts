import { readEventStream, StreamIdleError, type SseEvent } from './sse';

/** A streamed body that yields `parts` one by one, then (unless `stall`) ends. */
function streamedResponse(parts: string[], stall = false): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = parts.shift();
      if (next !== undefined) controller.enqueue(encoder.encode(next));
      else if (!stall) controller.close();
      else await new Promise(() => undefined);
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}

describe('reading an event stream', () => {
  it('hands over events split anywhere across reads, with their ids and types, skipping comments', async () => {
    const events: SseEvent[] = [];
    await readEventStream(streamedResponse(['id: 1\nda', 'ta: {"a":1}\n\n: keepalive\n\n', 'event: run.completed\nid: e-2\ndata: x\n\ndata: [DONE]\n\n']), (event) =>
      events.push(event),
    );
    expect(events).toEqual([
      { id: '1', event: undefined, data: '{"a":1}' },
      { id: 'e-2', event: 'run.completed', data: 'x' },
      { id: undefined, event: undefined, data: '[DONE]' },
    ]);
  });

  it('gives up on a stream that stays silent past its idle timeout', async () => {
    const events: SseEvent[] = [];
    await expect(readEventStream(streamedResponse(['data: first\n\n'], true), (event) => events.push(event), 100)).rejects.toBeInstanceOf(StreamIdleError);
    expect(events.map((event) => event.data)).toEqual(['first']);
  });
});
