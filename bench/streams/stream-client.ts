import { Agent, type ClientRequest, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { openConcurrently } from '../shared/open-concurrently';

/**
 * The client side of the streams benchmark: opens SSE responses (chat POSTs) with bounded concurrency, each on
 * a socket of its own, holds them without parsing once they are open, and closes them all at the end.
 */

/** One socket per stream, never reused or pooled away: a held stream owns its connection. */
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

export interface StreamTarget {
  /** Where stream `index` is opened. */
  url: (index: number) => string;
  headers: Record<string, string>;
  /** The request body of stream `index`. */
  body: (index: number) => string;
  /** The text that shows the stream is open (the first content event). */
  openedWhen: string;
}

export interface HeldStream {
  /** ms from sending the request to reading `openedWhen`. */
  readonly openMs: number;
  /** Whether the server ended the response (or the connection broke) while it was held. */
  endedEarly(): boolean;
  close(): void;
}

const OPEN_TIMEOUT_MS = 60_000;

export function openStream(target: StreamTarget, index: number): Promise<HeldStream> {
  const body = target.body(index);
  const headers = { ...target.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
  const sentAt = performance.now();
  return new Promise((resolve, reject) => {
    let outgoing: ClientRequest | null = null;
    let settled = false;
    let closing = false;
    let ended = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outgoing?.destroy();
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error(`stream ${index} was not open within ${OPEN_TIMEOUT_MS} ms`)), OPEN_TIMEOUT_MS);
    outgoing = httpRequest(target.url(index), { method: 'POST', headers, agent }, (incoming) => {
      incoming.setEncoding('utf8');
      let text = '';
      if (incoming.statusCode !== 200) {
        incoming.on('data', (part: string) => (text += part));
        incoming.on('end', () => fail(new Error(`stream ${index} answered ${incoming.statusCode}: ${text.slice(0, 300)}`)));
        return;
      }
      const onEnd = () => {
        ended = true;
        if (!settled) fail(new Error(`stream ${index} ended before it was open: ${text.slice(0, 300)}`));
      };
      incoming.on('end', onEnd);
      incoming.on('close', onEnd);
      incoming.on('error', onEnd);
      incoming.on('data', (part: string) => {
        if (settled) return;
        text += part;
        if (!text.includes(target.openedWhen)) return;
        settled = true;
        clearTimeout(timer);
        text = '';
        const openMs = performance.now() - sentAt;
        resolve({
          openMs,
          endedEarly: () => ended && !closing,
          close: () => {
            closing = true;
            outgoing?.destroy();
          },
        });
      });
    });
    outgoing.on('error', (error) => {
      ended = true;
      fail(error);
    });
    outgoing.end(body);
  });
}

export interface OpenedStreams {
  streams: HeldStream[];
  /** Wall time to open all of them, ms. */
  elapsedMs: number;
}

/**
 * Opens `count` streams, at most `concurrency` being opened at once. The first failure stops the opening; the
 * streams opened so far are closed and the failure is thrown. `signal` stops it the same way.
 */
export async function openStreams(
  target: StreamTarget,
  count: number,
  concurrency: number,
  signal: AbortSignal,
  onProgress: (opened: number) => void = () => undefined,
): Promise<OpenedStreams> {
  const { opened, elapsedMs } = await openConcurrently(count, concurrency, signal, (index) => openStream(target, index), onProgress);
  return { streams: opened, elapsedMs };
}

export { closeAll } from '../shared/open-concurrently';
