import { performance } from 'node:perf_hooks';
import { type HeldResponse, holdResponse } from '../shared/held-response';
import { openConcurrently } from '../shared/open-concurrently';

/**
 * The client side of the streams benchmark: opens SSE responses (chat POSTs) with bounded concurrency, each on
 * a socket of its own, holds them without parsing once they are open, and closes them all at the end.
 */

export interface StreamTarget {
  /** Where stream `index` is opened. */
  url: (index: number) => string;
  headers: Record<string, string>;
  /** The request body of stream `index`. */
  body: (index: number) => string;
  /** The text that shows the stream is open (the first content event). */
  openedWhen: string;
}

export interface HeldStream extends HeldResponse {
  /** ms from sending the request to reading `openedWhen`. */
  readonly openMs: number;
}

const OPEN_TIMEOUT_MS = 60_000;

export async function openStream(target: StreamTarget, index: number): Promise<HeldStream> {
  const body = target.body(index);
  const headers = { ...target.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
  const sentAt = performance.now();
  let openMs = 0;
  const held = await holdResponse({ url: target.url(index), method: 'POST', headers, body, timeoutMs: OPEN_TIMEOUT_MS, label: `stream ${index}` }, (incoming, opened) => {
    let text = '';
    const read = (part: string) => {
      text += part;
      if (!text.includes(target.openedWhen)) return;
      incoming.off('data', read);
      openMs = performance.now() - sentAt;
      opened();
    };
    incoming.on('data', read);
  });
  return { openMs, endedEarly: held.endedEarly, close: held.close };
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
