import { ApiError } from './api-error';
import type { ApiClient } from './client';
import { followLiveEvents, liveEventOf, type LiveEvent, type LiveStatus } from './live-events';

const frame = (id: string, type: string, data: Record<string, unknown>) =>
  `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ id, type, created_at: '2030-01-01T00:00:00.000Z', workspace_id: 'w', data })}\n\n`;

/** A stand-in for the API client's `stream`: each call takes the next scripted answer and records its headers. */
function scriptedClient(answers: (string | ApiError)[], calls: Record<string, string>[]): ApiClient {
  return {
    async stream(_target: string, options: { headers?: Record<string, string>; signal?: AbortSignal }) {
      calls.push(options.headers ?? {});
      const answer = answers.shift();
      // No more answers: a connection that stays open until aborted, as fetch does.
      if (answer === undefined) return new Promise<Response>((_done, fail) => options.signal?.addEventListener('abort', () => fail(options.signal?.reason)));
      if (answer instanceof ApiError) throw answer;
      return new Response(answer, { headers: { 'content-type': 'text/event-stream' } });
    },
  } as unknown as ApiClient;
}

describe('live events', () => {
  it('reads the type from `event:` and the payload from the section 13 envelope', () => {
    expect(liveEventOf('intern.status_changed', 'e1', JSON.stringify({ id: 'e1', type: 'intern.status_changed', data: { intern_id: 'i', status: 'queued' } }))).toEqual({
      id: 'e1',
      type: 'intern.status_changed',
      created_at: undefined,
      data: { intern_id: 'i', status: 'queued' },
    });
    expect(liveEventOf(undefined, undefined, 'not json')).toBeNull();
  });

  it('resumes after a drop with Last-Event-ID, and starts over from now when the resume point has expired', async () => {
    const calls: Record<string, string>[] = [];
    const events: LiveEvent[] = [];
    const statuses: LiveStatus[] = [];
    let resumed = 0;
    const stop = new AbortController();
    const client = scriptedClient(
      [
        frame('e1', 'intern.status_changed', { intern_id: 'i', status: 'queued' }),
        new ApiError(410, 'event e1 is no longer kept', 'events_expired'),
        frame('e2', 'run.completed', { intern_id: 'i' }),
      ],
      calls,
    );
    const following = followLiveEvents(
      client,
      { onEvent: (event) => events.push(event), onStatus: (status) => statuses.push(status), onResumed: () => (resumed += 1) },
      stop.signal,
    );
    const deadline = Date.now() + 10_000;
    while (calls.length < 4 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 20));
    stop.abort();
    await following;
    expect(events.map((event) => event.id)).toEqual(['e1', 'e2']);
    expect(calls.map((headers) => headers['last-event-id'])).toEqual([undefined, 'e1', undefined, 'e2']);
    expect(resumed).toBeGreaterThanOrEqual(2);
    expect(statuses).toContain('live');
    expect(statuses).toContain('reconnecting');
  });
});
