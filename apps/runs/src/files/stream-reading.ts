import type { Readable } from 'node:stream';

/**
 * Reads from a paused stream until `done` says how much of what arrived is the head (the rest is put back for the
 * next reader), or the stream ends (everything is the head). More than `limit` bytes without a head: rejects.
 */
export function readHead(stream: Readable, limit: number, done: (bytes: Buffer) => number | null): Promise<{ head: Buffer; ended: boolean }> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve({ head: Buffer.alloc(0), ended: true });
  return new Promise((resolve, reject) => {
    let bytes = Buffer.alloc(0);
    const finish = (error: Error | null, value?: { head: Buffer; ended: boolean }) => {
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      if (error === null && value !== undefined) resolve(value);
      else reject(error ?? new Error('stream ended'));
    };
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = stream.read() as Buffer | null) !== null) {
        bytes = Buffer.concat([bytes, chunk]);
        const end = done(bytes);
        if (end !== null) {
          if (end < bytes.length) stream.unshift(bytes.subarray(end));
          finish(null, { head: bytes.subarray(0, end), ended: false });
          return;
        }
        if (bytes.length > limit) {
          finish(new Error(`more than ${limit} bytes before the end of the head`));
          return;
        }
      }
    };
    const onEnd = () => finish(null, { head: bytes, ended: true });
    stream.on('readable', onReadable);
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    onReadable();
  });
}

/**
 * A stream's bytes in chunks of `max` (the last one shorter), read only as the chunks are asked for: the stream's own
 * async iterator does the reading, so its end (and bytes put back by `readHead` just before) is never missed. A stream
 * that fails ends the chunks; the reader's process outcome says why.
 */
export async function* chunksOf(stream: Readable, max: number): AsyncGenerator<Buffer, void, undefined> {
  let parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const piece of stream) {
      let bytes = piece as Buffer;
      while (size + bytes.length >= max) {
        const take = max - size;
        parts.push(bytes.subarray(0, take));
        yield Buffer.concat(parts, max);
        parts = [];
        size = 0;
        bytes = bytes.subarray(take);
      }
      if (bytes.length > 0) {
        parts.push(bytes);
        size += bytes.length;
      }
    }
  } catch {
    // Killed or broken: what was read is still sent, then the end.
  }
  if (size > 0) yield Buffer.concat(parts, size);
}
