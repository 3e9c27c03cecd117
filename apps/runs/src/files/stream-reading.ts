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
 * The next at most `max` bytes of a paused stream (waiting until `max` arrived or the stream ended), or null once it
 * ended. The pieces are joined once, when the chunk is complete: a 256 KiB chunk read 64 KiB at a time is copied once.
 */
export function readChunk(stream: Readable, max: number): Promise<Buffer | null> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve(null);
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    let size = 0;
    const finish = () => {
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      const bytes = Buffer.concat(parts, size);
      if (bytes.length > max) stream.unshift(bytes.subarray(max));
      resolve(bytes.length === 0 ? null : bytes.subarray(0, max));
    };
    const onReadable = () => {
      let piece: Buffer | null;
      while ((piece = stream.read() as Buffer | null) !== null) {
        parts.push(piece);
        size += piece.length;
        if (size >= max) return finish();
      }
    };
    const onEnd = () => finish();
    stream.on('readable', onReadable);
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    onReadable();
  });
}
