/**
 * Relays one chat response from the run's stream subject (or a run's chunk log, for the stream route) to the
 * client as server-sent events (CONTRACT sections 6 and 12; ARCHITECTURE "Messaging rules"). The caller
 * decodes each NATS message with `decodeStreamFrame` and hands it to `accept`; the relay checks `seq`, writes
 * each chunk's `id:`, watches for missing heartbeats, keeps idle proxies from closing the connection, and
 * bounds what it holds for a client that does not read.
 */
import type { ServerResponse } from 'node:http';
import type { StreamFrame } from '@interns/contracts';

/**
 * How the relay ended. `client_gone` and `overflow` mean the client will not see the rest of the response:
 * the caller cancels the run. `aborted`: the caller ended it with `abort()`.
 */
export type RelayOutcome = 'done' | 'client_gone' | 'severed' | 'overflow' | 'aborted';

export interface SseRelayOptions {
  /** The raw response (Fastify's `reply.raw` after `reply.hijack()`); the relay owns it from `start()` on. */
  response: ServerResponse;
  /** Write `: keepalive` after this much silence towards the client. */
  keepaliveIntervalMs: number;
  /** The run owner sends a frame at least this often; 3 * heartbeatMs without any frame => severed. Null: no heartbeats (a chunk log). */
  heartbeatMs: number | null;
  /** The `seq` before the first frame expected (a stream route resuming after chunk N: N). */
  afterSeq?: number;
  /** Bytes held for a client that does not read (and before `start()`); beyond => overflow. */
  bufferLimitBytes: number;
  /** The chunks (JSON) that close a severed stream: the 502 `stream_severed` error chunk and the final chunk. */
  severedChunks: () => string[];
  /** Extra response headers (e.g. x-correlation-id); the SSE headers win over these. */
  headers?: Record<string, string>;
  /**
   * Settles once every frame the broker sent so far has been delivered to `accept` (e.g. the NATS
   * connection's `flush()`). The watchdog asks it before severing: after a pause of the gateway's event
   * loop (GC, CPU starvation) the timers fire before the heartbeats waiting on the socket are read, and a
   * healthy stream must not be cut for that. It is waited for at most one more heartbeat interval. Omitted:
   * silence is judged by the timer alone.
   */
  confirmSilence?: () => Promise<void>;
}

/** The head of every event stream the gateway writes (exported for the streams benchmark's baseline). */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // nginx would otherwise buffer the stream.
  'x-accel-buffering': 'no',
} as const;

const DATA_PREFIX = Buffer.from('data: ');
const ID_PREFIX = 'id: ';
const EVENT_END = Buffer.from('\n\n');
const DONE_EVENT = Buffer.from('data: [DONE]\n\n');
/** CONTRACT section 6's keepalive, written by every event stream of the gateway after a silence. */
export const KEEPALIVE_COMMENT = Buffer.from(': keepalive\n\n');
/** Heartbeats the relay may miss before it calls the link broken. */
const MISSED_HEARTBEATS = 3;

type Phase = 'waiting' | 'streaming' | 'settled';
/** An end decided before `start()`; `start()` carries it out. */
type PendingEnd = 'done' | 'severed' | 'overflow';

export class SseRelay {
  /** Resolves once, when the relay is through with the response (or, before `start()`, with `abort()`). */
  readonly finished: Promise<RelayOutcome>;

  private readonly response: ServerResponse;
  private resolveFinished!: (outcome: RelayOutcome) => void;
  private phase: Phase = 'waiting';
  private pendingEnd: PendingEnd | null = null;
  private lastSeq = 0;
  /** Output the socket cannot take yet; `queue[queueHead]` is the oldest (no O(n) shift per write). */
  private queue: Buffer[] = [];
  private queueHead = 0;
  private queuedBytes = 0;
  /** True before `start()` and while the socket asks us to wait for 'drain'. */
  private blocked = true;
  private watchdog: NodeJS.Timeout | null = null;
  private keepalive: NodeJS.Timeout | null = null;

  constructor(private readonly options: SseRelayOptions) {
    this.response = options.response;
    this.lastSeq = options.afterSeq ?? 0;
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
  }

  /** Output held by the relay itself (not counting the socket's own buffers); never above `bufferLimitBytes`. */
  get bufferedBytes(): number {
    return this.queuedBytes;
  }

  /** One decoded message of the stream subject; `null` for one that did not decode (a broken link). */
  accept(frame: StreamFrame | null): void {
    if (this.phase === 'settled' || this.pendingEnd !== null) return;
    if (frame === null || frame.seq !== this.lastSeq + 1) return this.endSevered();
    this.lastSeq = frame.seq;
    this.watchdog?.refresh();
    switch (frame.kind) {
      case 'heartbeat':
        return;
      case 'chunk':
        // A chunk without bytes cannot be relayed as an event: the link is broken.
        if (frame.payload === null || frame.payload.length === 0) return this.endSevered();
        if (frame.eventId === null) return this.send(Buffer.concat([DATA_PREFIX, frame.payload, EVENT_END]));
        return this.send(Buffer.concat([Buffer.from(`${ID_PREFIX}${frame.eventId}\n`), DATA_PREFIX, frame.payload, EVENT_END]));
      case 'done':
        return this.end('done', [DONE_EVENT]);
      default: {
        const _unknown: never = frame.kind;
        return this.endSevered();
      }
    }
  }

  /**
   * Sends the SSE head and everything accepted so far, then relays as frames come. If the frames held before
   * start overflowed the limit, the response is destroyed instead (outcome `overflow`).
   */
  start(headers: Record<string, string> = {}): void {
    if (this.phase !== 'waiting') return;
    if (this.pendingEnd === 'overflow') {
      this.response.destroy();
      return this.settle('overflow');
    }
    // The client may have left while the caller waited for the run to accept.
    if (this.response.destroyed) return this.settle('client_gone');

    this.phase = 'streaming';
    this.response.on('close', this.onClose);
    // Without a listener a late socket error would be thrown; the 'close' that follows settles the relay.
    this.response.on('error', this.onClose);
    this.response.on('drain', this.flushQueue);
    this.response.writeHead(200, { ...this.options.headers, ...headers, ...SSE_HEADERS });
    this.response.flushHeaders();
    if (this.pendingEnd !== null) return this.finish(this.pendingEnd, []);

    this.flushQueue();
    const { heartbeatMs } = this.options;
    if (heartbeatMs !== null) this.watchdog = setTimeout(this.onSilence, MISSED_HEARTBEATS * heartbeatMs).unref();
    this.keepalive = setTimeout(this.onKeepalive, this.options.keepaliveIntervalMs).unref();
  }

  /** Ends the relay as severed (e.g. the stream subscription failed): severed chunks, `[DONE]`, end. */
  sever(): void {
    if (this.phase === 'settled' || this.pendingEnd !== null) return;
    this.endSevered();
  }

  /**
   * Ends the relay writing nothing more (e.g. server shutdown). After `start()` the response is destroyed;
   * before, it is left alone (it is not the relay's yet).
   */
  abort(): void {
    if (this.phase === 'settled') return;
    if (this.phase === 'streaming') this.response.destroy();
    this.settle('aborted');
  }

  private endSevered(): void {
    const events = this.options.severedChunks().map((chunk) => Buffer.from(`data: ${chunk}\n\n`));
    this.end('severed', [...events, DONE_EVENT]);
  }

  /** The closing events of a done or severed stream go after whatever is still queued. */
  private end(outcome: 'done' | 'severed', closing: Buffer[]): void {
    if (this.phase === 'streaming') return this.finish(outcome, closing);
    for (const bytes of closing) {
      this.send(bytes);
      if (this.pendingEnd === 'overflow') return;
    }
    this.pendingEnd = outcome;
  }

  /**
   * Hands the queue and the closing events to the response, ends it. This ignores backpressure once: it is
   * at most the bounded queue plus a few small events, and the response then ends on its own. Uncorked before
   * `end()`: on Node 22 and 24 an `end()` of a corked response whose head was flushed drops what was corked.
   */
  private finish(outcome: 'done' | 'severed', closing: Buffer[]): void {
    this.response.cork();
    for (let i = this.queueHead; i < this.queue.length; i++) this.response.write(this.queue[i]);
    for (const bytes of closing) this.response.write(bytes);
    this.response.uncork();
    this.response.end();
    this.settle(outcome);
  }

  private send(bytes: Buffer): void {
    if (!this.blocked) return this.write(bytes);
    if (this.queuedBytes + bytes.length > this.options.bufferLimitBytes) return this.overflow();
    this.queue.push(bytes);
    this.queuedBytes += bytes.length;
  }

  private write(bytes: Buffer): void {
    this.keepalive?.refresh();
    if (!this.response.write(bytes)) this.blocked = true;
  }

  private readonly flushQueue = (): void => {
    if (this.phase !== 'streaming') return;
    this.blocked = false;
    while (this.queueHead < this.queue.length && !this.blocked) {
      const bytes = this.queue[this.queueHead++];
      this.queuedBytes -= bytes.length;
      this.write(bytes);
    }
    if (this.queueHead === this.queue.length) this.dropQueue();
  };

  /** The client does not read: we could not send it anything anyway, and must not hold more. */
  private overflow(): void {
    this.dropQueue();
    if (this.phase === 'waiting') {
      this.pendingEnd = 'overflow';
      return;
    }
    this.response.destroy();
    this.settle('overflow');
  }

  private readonly onClose = (): void => {
    if (this.phase === 'streaming') this.settle('client_gone');
  };

  private readonly onSilence = (): void => {
    if (this.phase !== 'streaming') return;
    const confirm = this.options.confirmSilence;
    if (confirm === undefined) return this.endSevered();
    const seqAtSilence = this.lastSeq;
    // A frame read meanwhile refreshed the watchdog: silent only if none came.
    let judged = false;
    const judge = () => {
      if (judged) return;
      judged = true;
      clearTimeout(bound);
      if (this.phase === 'streaming' && this.pendingEnd === null && this.lastSeq === seqAtSilence) this.endSevered();
    };
    // Bounded by one more heartbeat interval: with the broker away the confirmation would never come.
    const bound = setTimeout(judge, this.options.heartbeatMs ?? 0).unref();
    confirm().then(judge, judge);
  };

  private readonly onKeepalive = (): void => {
    if (this.phase !== 'streaming') return;
    // A blocked socket is not idle for us: a comment would only queue behind the data it is waiting on.
    if (this.blocked) this.keepalive?.refresh();
    else this.write(KEEPALIVE_COMMENT);
  };

  private dropQueue(): void {
    this.queue = [];
    this.queueHead = 0;
    this.queuedBytes = 0;
  }

  private settle(outcome: RelayOutcome): void {
    this.phase = 'settled';
    if (this.watchdog !== null) clearTimeout(this.watchdog);
    if (this.keepalive !== null) clearTimeout(this.keepalive);
    this.watchdog = null;
    this.keepalive = null;
    this.dropQueue();
    this.response.off('drain', this.flushQueue);
    this.resolveFinished(outcome);
  }
}
