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

/** The next at most `max` bytes of a paused stream (waiting for at least one), or null once it ended. */
export function readChunk(stream: Readable, max: number): Promise<Buffer | null> {
  return readHead(stream, Number.MAX_SAFE_INTEGER, (bytes) => (bytes.length >= max ? max : null)).then(({ head, ended }) => {
    if (!ended) return head;
    return head.length === 0 ? null : head;
  }, () => null);
}
