import { once } from 'node:events';
import { createServer, request as httpRequest, type ClientRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { decodeStreamFrame, encodeStreamFrame, type StreamFrame, type StreamFrameKind } from '@interns/contracts';
import { createParser } from 'eventsource-parser';
import { type RelayOutcome, SseRelay, type SseRelayOptions } from './sse-relay';

const SEVERED_CHUNKS = [
  '{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"error"}],"error":{"code":502,"message":"the link to the run broke","metadata":{"reason":"stream_severed","retryable":true}}}',
  '{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"session_id":"s-1","usage":null}',
];
const SEVERED_END = [...SEVERED_CHUNKS.map((data) => ({ data })), { data: '[DONE]' }];

/** A content chunk as runs would publish it; multi-byte text shows the bytes pass unchanged. */
const chunk = (n: number, text = `héllo ✓ part ${n}`): string =>
  JSON.stringify({ id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: text }, finish_reason: null }] });

/** Frames go through the real codec, as the gateway receives them from NATS. */
function frame(seq: number, kind: StreamFrameKind, payload?: string): StreamFrame {
  const decoded = decodeStreamFrame(encodeStreamFrame(seq, kind, payload));
  if (decoded === null) throw new Error(`frame ${seq} did not decode`);
  return decoded;
}

type SseItem = { data: string } | { comment: string };
type ClientEnd = 'ended' | 'cut';

interface SseClient {
  request: ClientRequest;
  head: Promise<IncomingMessage>;
  /** Events and comments in arrival order. */
  items: SseItem[];
  /** `ended`: the body completed; `cut`: the connection closed first (or no response came). */
  closed: Promise<ClientEnd>;
}

/** `paused`: the client takes the head, then stops reading until the test resumes its message. */
function connect(port: number, paused: boolean): SseClient {
  const items: SseItem[] = [];
  // No agent: every test gets its own connection, closed at the end of the response.
  const request = httpRequest({ host: '127.0.0.1', port, path: '/chat', agent: false });
  const head = new Promise<IncomingMessage>((resolve, reject) => {
    request.once('response', resolve);
    request.once('error', reject);
  });
  const closed = head.then(
    (message) => {
      message.on('error', () => undefined);
      const parser = createParser({ onEvent: (event) => items.push({ data: event.data }), onComment: (comment) => items.push({ comment }) });
      message.setEncoding('utf8');
      message.on('data', (text: string) => parser.feed(text));
      if (paused) message.pause();
      return new Promise<ClientEnd>((resolve) => message.once('close', () => resolve(message.complete ? 'ended' : 'cut')));
    },
    (): ClientEnd => 'cut',
  );
  request.end();
  return { request, head, items, closed };
}

const dataOf = (items: SseItem[]): string[] => items.flatMap((item) => ('data' in item ? [item.data] : []));
const commentsOf = (items: SseItem[]): string[] => items.flatMap((item) => ('comment' in item ? [item.comment] : []));
const eventBytes = (payload: string): number => Buffer.byteLength(`data: ${payload}\n\n`);

async function until(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await sleep(2);
  }
}

/** Whether `finished` has resolved by now (it must not before the relay is through). */
async function settledYet(relay: SseRelay): Promise<RelayOutcome | null> {
  let outcome: RelayOutcome | null = null;
  void relay.finished.then((value) => (outcome = value));
  await nextTurn();
  return outcome;
}

describe('SseRelay over a real HTTP connection', () => {
  let server: Server;
  let port: number;
  const arrivals: Array<(response: ServerResponse) => void> = [];

  beforeAll(async () => {
    server = createServer((_request, response) => arrivals.shift()?.(response));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  /** A client request and the relay for its server-side response (not started). */
  async function open(options: Partial<SseRelayOptions> = {}, paused = false) {
    const arrived = new Promise<ServerResponse>((resolve) => arrivals.push(resolve));
    const client = connect(port, paused);
    const response = await arrived;
    const relay = new SseRelay({
      response,
      keepaliveIntervalMs: 60_000,
      heartbeatMs: 60_000,
      bufferLimitBytes: 256 * 1024,
      severedChunks: () => SEVERED_CHUNKS,
      ...options,
    });
    return { relay, response, client };
  }

  it('holds frames accepted before start(), relays them in order after the SSE head, and ends on done', async () => {
    const { relay, client } = await open({ headers: { 'x-correlation-id': 'corr-1', 'content-type': 'text/plain' } });
    relay.accept(frame(1, 'chunk', chunk(1)));
    relay.accept(frame(2, 'heartbeat'));
    relay.accept(frame(3, 'chunk', chunk(2)));
    expect(relay.bufferedBytes).toBe(eventBytes(chunk(1)) + eventBytes(chunk(2)));

    relay.start();
    const head = await client.head;
    relay.accept(frame(4, 'chunk', chunk(3)));
    relay.accept(frame(5, 'done'));
    relay.accept(frame(6, 'chunk', chunk(4)));

    await expect(relay.finished).resolves.toBe('done');
    await expect(client.closed).resolves.toBe('ended');
    expect(head.statusCode).toBe(200);
    expect(head.headers).toMatchObject({
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-correlation-id': 'corr-1',
    });
    expect(client.items).toEqual([{ data: chunk(1) }, { data: chunk(2) }, { data: chunk(3) }, { data: '[DONE]' }]);
    expect(relay.bufferedBytes).toBe(0);
  });

  const breaks: Array<[string, (relay: SseRelay) => void]> = [
    ['a gap in seq', (relay) => relay.accept(frame(4, 'chunk', chunk(4)))],
    ['a repeated seq', (relay) => relay.accept(frame(2, 'chunk', chunk(2)))],
    ['an undecodable message', (relay) => relay.accept(null)],
    ['a chunk frame without payload', (relay) => relay.accept(frame(3, 'chunk', ''))],
    ['sever() from outside', (relay) => relay.sever()],
  ];

  it.each(breaks)('%s severs the stream: severed chunks, [DONE], end; later frames are ignored', async (_name, breakLink) => {
    const { relay, client } = await open();
    relay.start();
    relay.accept(frame(1, 'chunk', chunk(1)));
    relay.accept(frame(2, 'chunk', chunk(2)));
    breakLink(relay);
    relay.accept(frame(3, 'chunk', chunk(3)));
    relay.sever();

    await expect(relay.finished).resolves.toBe('severed');
    await expect(client.closed).resolves.toBe('ended');
    expect(client.items).toEqual([{ data: chunk(1) }, { data: chunk(2) }, ...SEVERED_END]);
  });

  it('a break before start() is written by start(), after the frames held until then', async () => {
    const { relay, client } = await open();
    relay.accept(frame(1, 'chunk', chunk(1)));
    relay.accept(frame(3, 'chunk', chunk(3)));
    expect(await settledYet(relay)).toBeNull();

    relay.start();
    await expect(relay.finished).resolves.toBe('severed');
    await expect(client.closed).resolves.toBe('ended');
    expect(client.items).toEqual([{ data: chunk(1) }, ...SEVERED_END]);
  });

  it('no frame for 3 heartbeat intervals after start() severs the stream', async () => {
    const heartbeatMs = 50;
    const { relay, client } = await open({ heartbeatMs });
    relay.start();
    const lastFrameAt = performance.now();
    relay.accept(frame(1, 'chunk', chunk(1)));

    await expect(relay.finished).resolves.toBe('severed');
    // A little slack: performance.now() and the timers' clock round differently.
    expect(performance.now() - lastFrameAt).toBeGreaterThanOrEqual(3 * heartbeatMs - 5);
    await expect(client.closed).resolves.toBe('ended');
    expect(client.items).toEqual([{ data: chunk(1) }, ...SEVERED_END]);
  });

  it('asks confirmSilence before severing: frames read meanwhile (a paused event loop) keep the stream open', async () => {
    const heartbeatMs = 20;
    let seq = 0;
    let confirmations = 0;
    const { relay, client } = await open({
      heartbeatMs,
      // The heartbeats that were waiting on the socket while the loop stood still are read before it settles.
      confirmSilence: async () => {
        confirmations += 1;
        if (confirmations <= 2) relay.accept(frame(++seq, 'heartbeat'));
      },
    });
    relay.start();
    relay.accept(frame(++seq, 'chunk', chunk(1)));
    // Two silences rescued by late heartbeats; the third is real.
    await expect(relay.finished).resolves.toBe('severed');
    expect(confirmations).toBe(3);
    await expect(client.closed).resolves.toBe('ended');
    expect(client.items).toEqual([{ data: chunk(1) }, ...SEVERED_END]);
  });

  it('severs a silent stream even when the confirmation never comes (the broker is away)', async () => {
    const heartbeatMs = 20;
    const { relay, client } = await open({ heartbeatMs, confirmSilence: () => new Promise<void>(() => undefined) });
    relay.start();
    relay.accept(frame(1, 'chunk', chunk(1)));
    await expect(relay.finished).resolves.toBe('severed');
    await expect(client.closed).resolves.toBe('ended');
    expect(client.items).toEqual([{ data: chunk(1) }, ...SEVERED_END]);
  });

  it('heartbeats keep the stream open without reaching the client, which gets keepalive comments instead', async () => {
    const heartbeatMs = 50;
    const { relay, client } = await open({ heartbeatMs, keepaliveIntervalMs: 30 });
    relay.start();
    const startedAt = performance.now();
    let seq = 0;
    // Twice the watchdog's window: without heartbeats counting, the stream would be severed.
    while (performance.now() - startedAt < 6 * heartbeatMs) {
      relay.accept(frame(++seq, 'heartbeat'));
      await sleep(10);
    }
    relay.accept(frame(seq + 1, 'done'));

    await expect(relay.finished).resolves.toBe('done');
    await expect(client.closed).resolves.toBe('ended');
    expect(dataOf(client.items)).toEqual(['[DONE]']);
    const comments = commentsOf(client.items);
    expect(comments.length).toBeGreaterThanOrEqual(4);
    expect(new Set(comments)).toEqual(new Set(['keepalive']));
  });

  it('every write postpones the keepalive comment', async () => {
    const keepaliveIntervalMs = 200;
    const { relay, client } = await open({ keepaliveIntervalMs });
    relay.start();
    const startedAt = performance.now();
    let seq = 0;
    // Taken when the relay is handed the frame: it writes and postpones the keepalive then, not when the
    // client finally reads it (later under load), so this is a lower bound of the relay's own clock.
    let lastWriteAt = 0;
    while (performance.now() - startedAt < 2.5 * keepaliveIntervalMs) {
      lastWriteAt = performance.now();
      relay.accept(frame(++seq, 'chunk', chunk(seq)));
      await sleep(20);
    }
    await until(() => client.items.length === seq);
    expect(commentsOf(client.items)).toEqual([]);

    await until(() => commentsOf(client.items).length === 1);
    expect(performance.now() - lastWriteAt).toBeGreaterThanOrEqual(keepaliveIntervalMs - 25);
    relay.accept(frame(++seq, 'done'));
    await expect(relay.finished).resolves.toBe('done');
  });

  it('a client that leaves mid-stream gives client_gone; nothing is written after', async () => {
    const { relay, client, response } = await open({ heartbeatMs: 20, keepaliveIntervalMs: 20 });
    relay.start();
    relay.accept(frame(1, 'chunk', chunk(1)));
    await until(() => client.items.length === 1);

    client.request.destroy();
    await expect(relay.finished).resolves.toBe('client_gone');
    relay.accept(frame(2, 'chunk', chunk(2)));
    relay.sever();
    // Past the watchdog and keepalive deadlines: a live timer would try to end or write.
    await sleep(100);
    expect(response.writableEnded).toBe(false);
  });

  it('a client that left before start() gives client_gone and no response', async () => {
    const { relay, client, response } = await open();
    relay.accept(frame(1, 'chunk', chunk(1)));
    client.request.destroy();
    await once(response, 'close');

    relay.start();
    await expect(relay.finished).resolves.toBe('client_gone');
    expect(response.headersSent).toBe(false);
    expect(relay.bufferedBytes).toBe(0);
  });

  it('a client that reads slowly gets every chunk in order once the socket drains', async () => {
    const bufferLimitBytes = 256 * 1024;
    const large = (n: number): string => chunk(n, `${n}`.padEnd(64 * 1024, '.'));
    const { relay, client } = await open({ bufferLimitBytes }, true);
    relay.start();
    const message = await client.head;

    let seq = 0;
    // Until the socket pushes back and the relay queues, then a little more (well under the limit).
    while (relay.bufferedBytes === 0 && seq < 1000) {
      relay.accept(frame(++seq, 'chunk', large(seq)));
      await nextTurn();
    }
    expect(relay.bufferedBytes).toBeGreaterThan(0);
    relay.accept(frame(++seq, 'chunk', large(seq)));
    relay.accept(frame(++seq, 'heartbeat'));
    relay.accept(frame(++seq, 'chunk', large(seq)));
    expect(relay.bufferedBytes).toBeLessThanOrEqual(bufferLimitBytes);

    message.resume();
    await until(() => relay.bufferedBytes === 0, 5000);
    relay.accept(frame(++seq, 'done'));
    await expect(relay.finished).resolves.toBe('done');
    await expect(client.closed).resolves.toBe('ended');
    const expected = Array.from({ length: seq - 1 }, (_, i) => i + 1).filter((n) => n !== seq - 2).map((n) => large(n));
    expect(dataOf(client.items)).toEqual([...expected, '[DONE]']);
  });

  it('a client that stops reading gives overflow, holding at most the buffer limit', async () => {
    const bufferLimitBytes = 256 * 1024;
    const large = chunk(0, 'x'.repeat(64 * 1024));
    const { relay, client, response } = await open({ bufferLimitBytes }, true);
    relay.start();
    const message = await client.head;

    let outcome: RelayOutcome | null = null;
    void relay.finished.then((value) => (outcome = value));
    let maxBuffered = 0;
    let seq = 0;
    // A few hundred 64 KiB chunks fill the socket buffers (kernel and Node) long before the end.
    while (outcome === null && seq < 1000) {
      relay.accept(frame(++seq, 'chunk', large));
      maxBuffered = Math.max(maxBuffered, relay.bufferedBytes);
      await nextTurn();
    }

    expect(outcome).toBe('overflow');
    expect(maxBuffered).toBeGreaterThan(bufferLimitBytes - eventBytes(large));
    expect(maxBuffered).toBeLessThanOrEqual(bufferLimitBytes);
    expect(relay.bufferedBytes).toBe(0);
    expect(response.destroyed).toBe(true);
    // The client sees the cut once it reads again: the connection closed mid-body.
    message.resume();
    await expect(client.closed).resolves.toBe('cut');
  });

  it('frames held before start() beyond the limit give overflow; start() destroys the response', async () => {
    const bufferLimitBytes = 1000;
    const { relay, client, response } = await open({ bufferLimitBytes });
    let maxBuffered = 0;
    for (let seq = 1; seq <= 10; seq++) {
      relay.accept(frame(seq, 'chunk', chunk(seq)));
      maxBuffered = Math.max(maxBuffered, relay.bufferedBytes);
    }
    expect(maxBuffered).toBeGreaterThan(0);
    expect(maxBuffered).toBeLessThanOrEqual(bufferLimitBytes);
    expect(await settledYet(relay)).toBeNull();

    relay.start();
    await expect(relay.finished).resolves.toBe('overflow');
    expect(response.destroyed).toBe(true);
    await expect(client.closed).resolves.toBe('cut');
  });

  it('abort() after start() destroys the response without another byte', async () => {
    const { relay, client, response } = await open();
    relay.start();
    relay.accept(frame(1, 'chunk', chunk(1)));
    await until(() => client.items.length === 1);

    relay.abort();
    relay.accept(frame(2, 'done'));
    await expect(relay.finished).resolves.toBe('aborted');
    expect(response.destroyed).toBe(true);
    await expect(client.closed).resolves.toBe('cut');
    expect(client.items).toEqual([{ data: chunk(1) }]);
  });

  it('abort() before start() leaves the response to the caller', async () => {
    const { relay, client, response } = await open();
    relay.accept(frame(1, 'chunk', chunk(1)));
    relay.abort();
    relay.start();
    await expect(relay.finished).resolves.toBe('aborted');
    expect(response.headersSent).toBe(false);

    response.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"steered"}');
    expect((await client.head).statusCode).toBe(202);
    await expect(client.closed).resolves.toBe('ended');
    expect(client.items).toEqual([]);
  });
});
