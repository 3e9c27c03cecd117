import { Readable } from 'node:stream';
import { headers as natsHeaders, RequestError, type Msg, type NatsConnection } from '@nats-io/transport-node';
import {
  DomainError,
  fileChunkBytes,
  FILE_TRANSFER_END_HEADER,
  FILE_TRANSFER_ERROR_HEADER,
  FILE_TRANSFER_OP_HEADER,
  FILE_TRANSFER_OPS,
  FILE_TRANSFER_STALL_MS,
  FILE_TRANSFER_WINDOW,
  type FileWriteResult,
  type ServiceErrorPayload,
  type Subjects,
} from '@interns/contracts';
import { RemoteServiceError } from '@interns/messaging';

const EMPTY = new Uint8Array(0);

/**
 * The gateway's end of a file transfer (interface section 21; the runs end is apps/runs/src/files/file-transfers.ts):
 * chunks of fileChunkBytes (as large as the NATS server's max_payload allows, up to FILE_CHUNK_BYTES) over the
 * transfer's own subject, at most FILE_TRANSFER_WINDOW requests in flight. A step that gets no answer within
 * FILE_TRANSFER_STALL_MS fails the transfer; giving up tells the runs side to abort.
 */
export class FileTransferClient {
  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
    /** FILE_TRANSFER_STALL_MS. */
    private readonly stallMs: number = FILE_TRANSFER_STALL_MS,
  ) {}

  /**
   * The file's bytes as a stream that asks for the next chunks only as it is read (backpressure all the way to the
   * sandbox's `cat`); destroyed early (the client left), it aborts the transfer.
   */
  download(transferId: string, size: number): Readable {
    const chunkBytes = this.chunkBytes();
    const total = Math.ceil(size / chunkBytes) + 1; // the chunks, then the end
    const pending: Promise<Msg>[] = [];
    let asked = 0;
    let finished = false;
    let pumping = false;
    const ask = () => {
      while (asked < total && pending.length < FILE_TRANSFER_WINDOW) {
        const reply = this.step(transferId, FILE_TRANSFER_OPS.next, EMPTY);
        reply.catch(() => undefined);
        pending.push(reply);
        asked++;
      }
    };
    const pump = async (stream: Readable) => {
      try {
        for (;;) {
          ask();
          const next = pending.shift();
          if (next === undefined) throw new Error('the transfer ended without its end');
          const reply = await next;
          if (reply.headers?.get(FILE_TRANSFER_END_HEADER) === '1') {
            finished = true;
            stream.push(null);
            return;
          }
          if (!stream.push(Buffer.from(reply.data.buffer, reply.data.byteOffset, reply.data.byteLength))) return;
        }
      } catch (error) {
        finished = true;
        stream.destroy(error as Error);
      } finally {
        pumping = false;
      }
    };
    return new Readable({
      highWaterMark: chunkBytes,
      read() {
        if (pumping || finished) return;
        pumping = true;
        void pump(this);
      },
      destroy: (error, callback) => {
        if (!finished) this.abort(transferId);
        finished = true;
        callback(error);
      },
    });
  }

  /**
   * Sends the body in chunks, each acknowledged once in the writer's pipe, and answers what was written. More than
   * `maxBytes`: 413, and the transfer is aborted (nothing of it remains).
   */
  async upload(transferId: string, body: Readable | null, maxBytes: number): Promise<FileWriteResult> {
    const chunkBytes = this.chunkBytes();
    const inFlight: Promise<Msg>[] = [];
    const send = async (chunk: Buffer) => {
      const reply = this.step(transferId, FILE_TRANSFER_OPS.chunk, chunk);
      reply.catch(() => undefined);
      inFlight.push(reply);
      if (inFlight.length >= FILE_TRANSFER_WINDOW) await inFlight.shift();
    };
    try {
      if (body !== null) {
        let received = 0;
        let buffered: Buffer[] = [];
        let bufferedBytes = 0;
        for await (const piece of bodyChunks(body)) {
          received += piece.length;
          if (received > maxBytes) throw new DomainError('payload_too_large', `a file upload may carry at most ${maxBytes} bytes`);
          buffered.push(piece);
          bufferedBytes += piece.length;
          while (bufferedBytes >= chunkBytes) {
            const all = Buffer.concat(buffered, bufferedBytes);
            await send(all.subarray(0, chunkBytes));
            buffered = [all.subarray(chunkBytes)];
            bufferedBytes -= chunkBytes;
          }
        }
        if (bufferedBytes > 0) await send(Buffer.concat(buffered, bufferedBytes));
      }
      while (inFlight.length > 0) await inFlight.shift();
      const end = await this.step(transferId, FILE_TRANSFER_OPS.end, EMPTY);
      return end.json<FileWriteResult>();
    } catch (error) {
      this.abort(transferId);
      throw error;
    }
  }

  /** The runs side reckons the same size from the same server (fileChunkBytes). */
  private chunkBytes(): number {
    return fileChunkBytes(this.nc.info?.max_payload);
  }

  /** Tells the runs side to give the transfer up (its process killed, an upload's leftovers removed). */
  abort(transferId: string): void {
    const headers = natsHeaders();
    headers.set(FILE_TRANSFER_OP_HEADER, FILE_TRANSFER_OPS.abort);
    this.nc.publish(this.subjects.fileTransfer(transferId), EMPTY, { headers });
  }

  /** One message of the transfer and its answer; a refusal comes back as the RemoteServiceError it is. */
  private async step(transferId: string, op: string, data: Uint8Array): Promise<Msg> {
    const headers = natsHeaders();
    headers.set(FILE_TRANSFER_OP_HEADER, op);
    let reply: Msg;
    try {
      reply = await this.nc.request(this.subjects.fileTransfer(transferId), data, { timeout: this.stallMs, headers });
    } catch (error) {
      if (error instanceof RequestError && error.isNoResponders()) throw new DomainError('internal_error', 'the file transfer ended on the runs side; try again');
      throw new DomainError('internal_error', 'the file transfer stalled; try again');
    }
    if (reply.headers?.get(FILE_TRANSFER_ERROR_HEADER) === '1') throw new RemoteServiceError(reply.json<ServiceErrorPayload>());
    return reply;
  }
}

/** The request body's pieces; a body cut short (the client left, broken framing) is the client's fault, not a failure here. */
export async function* bodyChunks(body: Readable): AsyncGenerator<Buffer> {
  const pieces = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Buffer>;
    try {
      next = await pieces.next();
    } catch {
      throw new DomainError('invalid_body', 'the upload body ended before its end');
    }
    if (next.done === true) return;
    yield next.value;
  }
}
