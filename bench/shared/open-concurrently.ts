import { performance } from 'node:perf_hooks';

/** Something a benchmark holds open (a stream, a subscriber) and lets go of. */
export interface Closable {
  close(): void;
}

/**
 * Opens `count` things with at most `concurrency` opens in flight. On the first failure (or the signal) the rest are
 * not opened, what was opened is closed and the failure thrown, so a broken run leaves nothing held.
 */
export async function openConcurrently<T extends Closable>(
  count: number,
  concurrency: number,
  signal: AbortSignal,
  open: (index: number) => Promise<T>,
  onProgress: (opened: number) => void = () => undefined,
): Promise<{ opened: T[]; elapsedMs: number }> {
  const opened: T[] = [];
  const startedAt = performance.now();
  let next = 0;
  let failure: unknown = null;
  const worker = async () => {
    while (failure === null && next < count && !signal.aborted) {
      const index = next++;
      try {
        opened.push(await open(index));
        onProgress(opened.length);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  if (failure !== null || signal.aborted) {
    closeAll(opened);
    throw failure ?? new Error('interrupted');
  }
  return { opened, elapsedMs: performance.now() - startedAt };
}

export function closeAll(held: readonly Closable[]): void {
  for (const one of held) one.close();
}
