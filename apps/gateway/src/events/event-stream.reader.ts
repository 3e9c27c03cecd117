import type { ServerResponse } from 'node:http';
import type { Principal } from '@interns/contracts';
import { KEEPALIVE_COMMENT, SSE_HEADERS } from '../chat/sse-relay';
import { audienceIncludes } from './event-audience';
import type { FeedEntry } from './event-ring';

/** Why a reader ended. */
export type ReaderEnd = 'client_gone' | 'fell_behind' | 'stalled' | 'credential_revoked' | 'shutdown';

/** The feed's entries as a reader walks them. */
export interface FeedEntries {
  at(position: number): FeedEntry | undefined;
  readonly next: number;
}

export interface EventStreamReaderOptions {
  /** The raw response (after `reply.hijack()`); the reader owns it from `start()` on. */
  response: ServerResponse;
  principal: Principal;
  entries: FeedEntries;
  /** The first position to send: after the `Last-Event-ID` event, or the feed's next (live only). */
  from: number;
  /** Write `: keepalive` after this much silence towards the client. */
  keepaliveIntervalMs: number;
  /** A socket that takes nothing this long while output waits: the client is not reading and is cut off. */
  stallLimitMs: number;
  /** How often the credential is checked again (a stream outlives any one lookup). */
  recheckIntervalMs: number;
  /** Whether the request's credential still passes the intern routes' checks. */
  stillAdmitted: () => Promise<boolean>;
  headers: Record<string, string>;
}

/**
 * One client of the workspace event stream. It holds no events of its own: it is a position in the feed's
 * shared entries, sends what its principal may see from there while the socket takes it, and waits for 'drain'
 * when it does not. A reader left behind by the feed's retention (or that takes nothing for `stallLimitMs`) is
 * cut off, and may resume with `Last-Event-ID`. Its timers (keepalive, stall, credential check) are all here.
 */
export class EventStreamReader {
  readonly finished: Promise<ReaderEnd>;
  private resolveFinished!: (end: ReaderEnd) => void;
  private position: number;
  private streaming = false;
  private blocked = false;
  private checking = false;
  private keepalive: NodeJS.Timeout | null = null;
  private stall: NodeJS.Timeout | null = null;
  private recheck: NodeJS.Timeout | null = null;

  constructor(private readonly options: EventStreamReaderOptions) {
    this.position = options.from;
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
  }

  get principal(): Principal {
    return this.options.principal;
  }

  /** Sends the SSE head and whatever is due from `from`, then follows the feed (`wake`). */
  start(): void {
    const { response } = this.options;
    if (response.destroyed) return this.settle('client_gone');
    this.streaming = true;
    response.on('close', this.onClose);
    // Without a listener a late socket error would be thrown; the 'close' that follows settles the reader.
    response.on('error', this.onClose);
    response.on('drain', this.onDrain);
    response.writeHead(200, { ...this.options.headers, ...SSE_HEADERS });
    response.flushHeaders();
    this.keepalive = setTimeout(this.onKeepalive, this.options.keepaliveIntervalMs).unref();
    this.recheck = setInterval(this.onRecheck, this.options.recheckIntervalMs).unref();
    this.wake();
  }

  /** New entries in the feed: send those the principal sees, as far as the socket takes them. */
  wake(): void {
    if (!this.streaming || this.blocked) return;
    const { entries, principal, response } = this.options;
    while (this.position < entries.next) {
      const entry = entries.at(this.position);
      // Dropped under the reader: it cannot be sent everything it should see.
      if (entry === undefined) return this.end('fell_behind');
      this.position += 1;
      if (!audienceIncludes(entry.audience, principal)) continue;
      this.keepalive?.refresh();
      if (!response.write(entry.frame)) {
        this.blocked = true;
        this.stall = setTimeout(this.onStall, this.options.stallLimitMs).unref();
        return;
      }
    }
  }

  /**
   * The feed dropped its entries before `first`. A reader waiting on its socket had some of them still to send:
   * it is cut off. Any other has sent all it sees of them (it is woken only for its workspace's events).
   */
  dropped(first: number): void {
    if (!this.streaming || this.position >= first) return;
    if (this.blocked) this.end('fell_behind');
    else this.position = first;
  }

  /** Ends the response (shutdown, a revoked credential, a reader left behind): the client may reconnect elsewhere. */
  end(reason: ReaderEnd): void {
    if (!this.streaming) return;
    const { response } = this.options;
    // A socket that takes nothing would hold `end()` open: it is let go at once.
    if (reason === 'stalled') response.destroy();
    else response.end();
    this.settle(reason);
  }

  private readonly onDrain = (): void => {
    if (!this.streaming) return;
    this.blocked = false;
    if (this.stall !== null) clearTimeout(this.stall);
    this.stall = null;
    this.wake();
  };

  private readonly onClose = (): void => {
    if (this.streaming) this.settle('client_gone');
  };

  private readonly onStall = (): void => {
    if (this.streaming && this.blocked) this.end('stalled');
  };

  private readonly onKeepalive = (): void => {
    if (!this.streaming) return;
    // A blocked socket is not idle: a comment would only queue behind the events it is waiting on.
    this.keepalive?.refresh();
    if (!this.blocked && !this.options.response.write(KEEPALIVE_COMMENT)) {
      this.blocked = true;
      this.stall = setTimeout(this.onStall, this.options.stallLimitMs).unref();
    }
  };

  private readonly onRecheck = (): void => {
    if (!this.streaming || this.checking) return;
    this.checking = true;
    this.options.stillAdmitted().then(
      (admitted) => {
        this.checking = false;
        if (!admitted) this.end('credential_revoked');
      },
      // No answer (the identity database away): the stream goes on; the next check decides.
      () => (this.checking = false),
    );
  };

  private settle(end: ReaderEnd): void {
    this.streaming = false;
    for (const timer of [this.keepalive, this.stall]) if (timer !== null) clearTimeout(timer);
    if (this.recheck !== null) clearInterval(this.recheck);
    this.keepalive = this.stall = this.recheck = null;
    this.options.response.off('drain', this.onDrain);
    this.resolveFinished(end);
  }
}
