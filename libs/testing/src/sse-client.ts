import { ClientRequest, IncomingMessage, request as httpRequest } from 'node:http';
import { createParser } from 'eventsource-parser';

/**
 * A chat client for tests: one request (a chat POST, a run stream GET) whose answer is either JSON (an error
 * before the stream, 202 steered) or a server-sent event stream parsed with eventsource-parser. Events are
 * collected as they arrive; `next()` waits for the next one, `close()` leaves mid-stream as a client would.
 */
export class SseResponse {
  /** `data` of every event so far (chunk JSON text, or `[DONE]`). */
  readonly events: string[] = [];
  /** The `id:` of each event in `events`, at the same index (undefined where the event had none). */
  readonly ids: (string | undefined)[] = [];
  /** The `event:` of each event in `events`, at the same index (undefined where the event had none). */
  readonly types: (string | undefined)[] = [];
  /** Comment lines (`: keepalive`) so far, without the colon. */
  readonly comments: string[] = [];
  /** Resolves when the server ended the response (or the client closed it). */
  readonly ended: Promise<void>;
  private waiters: (() => void)[] = [];
  private endedFlag = false;
  private read = 0;

  constructor(
    readonly status: number,
    readonly headers: IncomingMessage['headers'],
    private readonly outgoing: ClientRequest,
    readonly incoming: IncomingMessage,
  ) {
    const parser = createParser({
      onEvent: (event) => {
        this.events.push(event.data);
        this.ids.push(event.id);
        this.types.push(event.event);
        this.wake();
      },
      onComment: (comment) => {
        this.comments.push(comment.trim());
        this.wake();
      },
    });
    this.ended = new Promise((resolve) => {
      const finish = () => {
        this.endedFlag = true;
        this.wake();
        resolve();
      };
      incoming.on('end', finish);
      incoming.on('close', finish);
      incoming.on('error', finish);
    });
    incoming.setEncoding('utf8');
    incoming.on('data', (text: string) => parser.feed(text));
  }

  get isEnded(): boolean {
    return this.endedFlag;
  }

  /** The events parsed as JSON, `[DONE]` excluded. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary chunk shapes
  get chunks(): any[] {
    return this.events.filter((data) => data !== '[DONE]').map((data) => JSON.parse(data));
  }

  /** All `delta.content` so far, joined. */
  get content(): string {
    return this.chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? '').join('');
  }

  /** The next event's data not yet returned by `next()`, or null when the response ended first. */
  async next(timeoutMs = 10_000): Promise<string | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.read >= this.events.length) {
      if (this.endedFlag) return null;
      if (Date.now() > deadline) throw new Error(`no event within ${timeoutMs} ms (got ${JSON.stringify(this.events)})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events[this.read++];
  }

  /** Waits until some event's data contains `text`. */
  async until(predicate: (events: string[]) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.events)) {
      if (this.endedFlag) throw new Error(`stream ended before the condition held: ${JSON.stringify(this.events)}`);
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(this.events)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Leaves mid-stream: the connection is destroyed. */
  close(): void {
    this.outgoing.destroy();
    this.incoming.destroy();
  }

  /** Waits for the end of the response and returns every event. */
  async all(timeoutMs = 30_000): Promise<string[]> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.ended,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`stream did not end within ${timeoutMs} ms: ${JSON.stringify(this.events)}`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    return this.events;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}

export interface JsonAnswer {
  status: number;
  headers: IncomingMessage['headers'];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  body: any;
}

/** POSTs `json` to `url`; resolves to an SseResponse when the answer is an event stream, else to the JSON answer. */
export function postForStream(
  url: string,
  options: { token?: string; json: unknown; headers?: Record<string, string> },
): Promise<SseResponse | JsonAnswer> {
  const body = JSON.stringify(options.json);
  return requestForStream(url, 'POST', body, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    ...options.headers,
  }, options.token);
}

/** GETs `url` (a run's stream; `Last-Event-ID` among `headers` to resume); as postForStream. */
export function getForStream(url: string, options: { token?: string; headers?: Record<string, string> }): Promise<SseResponse | JsonAnswer> {
  return requestForStream(url, 'GET', null, { ...options.headers }, options.token);
}

function requestForStream(
  url: string,
  method: string,
  body: string | null,
  headers: Record<string, string>,
  token: string | undefined,
): Promise<SseResponse | JsonAnswer> {
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url, { method, headers }, (incoming) => {
      if ((incoming.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        resolve(new SseResponse(incoming.statusCode ?? 0, incoming.headers, outgoing, incoming));
        return;
      }
      const parts: Buffer[] = [];
      incoming.on('data', (part: Buffer) => parts.push(part));
      incoming.on('error', reject);
      incoming.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: the text itself
        }
        resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: parsed });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(body ?? undefined);
  });
}
