import type { Writable } from 'node:stream';

/**
 * Writes an upload into its writer's stdin one chunk at a time: each write settles with its write callback (true:
 * the chunk is in the pipe, which is the backpressure) or, should the process end first (the quota reached mid-way,
 * a kill), with false. Only the chunk being written is held: a listener on the process's end made per chunk (a
 * `Promise.race` against it) kept every chunk's scope alive until the upload ended, 100 MiB of them for a 100 MiB
 * upload.
 */
export function stdinWriter(stdin: Writable, finished: Promise<unknown>): (chunk: Uint8Array) => Promise<boolean> {
  let ended = false;
  let wakeWriter: (() => void) | null = null;
  const onEnd = () => {
    ended = true;
    wakeWriter?.();
    wakeWriter = null;
  };
  void finished.then(onEnd, onEnd);
  return (chunk) => {
    if (ended) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      wakeWriter = () => resolve(false);
      stdin.write(chunk, (error) => {
        wakeWriter = null;
        resolve(error === null || error === undefined);
      });
    });
  };
}
