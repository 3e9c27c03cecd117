import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { Logger } from '@nestjs/common';
import {
  DomainError,
  fileChunkBytes,
  FILE_TRANSFER_END_HEADER,
  FILE_TRANSFER_ERROR_HEADER,
  FILE_TRANSFER_OP_HEADER,
  FILE_TRANSFER_OPS,
  type Subjects,
} from '@interns/contracts';
import { serviceErrorPayloadOf } from '@interns/messaging';
import { chunksOf } from './stream-reading';
import type { FileDownload, FileUpload } from './workspace-files';

/** One transfer's end of the protocol: what each message does, and what a stall or shutdown does. */
interface TransferHandler {
  handle(op: string, msg: Msg): Promise<'open' | 'done'>;
  abort(): Promise<void>;
  /** Runs once the transfer ended, however it did (its slot freed). */
  done(): void;
}

/**
 * File bodies between the gateway and this replica (interface section 21), one subject per transfer
 * (`runs.files.<id>`, served only here). The gateway drives: a download by asking for the next chunk, an upload by
 * sending chunks and waiting for their acknowledgement, at most FILE_TRANSFER_WINDOW in flight, so neither side
 * buffers more than a few chunks. Messages are handled one at a time, in order. A transfer that hears nothing for
 * `stallMs` is aborted: its process killed, an upload's leftovers removed.
 */
export class FileTransfers {
  private readonly logger = new Logger('FileTransfers');
  private readonly open = new Map<string, { subscription: Subscription; handler: TransferHandler; timer: NodeJS.Timeout }>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
    private readonly stallMs: number,
  ) {}

  /** Serves a download: each `next` answers up to a chunk (fileChunkBytes); the last reply (maybe empty) carries the end header. */
  serveDownload(download: FileDownload, done: () => void = () => undefined): string {
    const chunks = chunksOf(download.stream, fileChunkBytes(this.nc.info?.max_payload));
    return this.serve({
      handle: async (op, msg) => {
        if (op !== FILE_TRANSFER_OPS.next) return unexpected(op);
        const chunk = await chunks.next();
        if (chunk.done !== true) {
          msg.respond(chunk.value);
          return 'open';
        }
        await download.finish();
        const headers = natsHeaders();
        headers.set(FILE_TRANSFER_END_HEADER, '1');
        msg.respond(new Uint8Array(0), { headers });
        return 'done';
      },
      abort: async () => download.abort(),
      done,
    });
  }

  /** Serves an upload: each `chunk` is acknowledged once in the writer's pipe; `end` answers the FileWriteResult. */
  serveUpload(upload: FileUpload, done: () => void = () => undefined): string {
    return this.serve({
      handle: async (op, msg) => {
        if (op === FILE_TRANSFER_OPS.chunk) {
          await upload.write(msg.data);
          msg.respond(new Uint8Array(0));
          return 'open';
        }
        if (op === FILE_TRANSFER_OPS.end) {
          msg.respond(JSON.stringify(await upload.end()));
          return 'done';
        }
        return unexpected(op);
      },
      abort: () => upload.abort(),
      done,
    });
  }

  /** Aborts every open transfer (at shutdown). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.open.keys()].map((id) => this.finish(id, true)));
  }

  private serve(handler: TransferHandler): string {
    const id = randomUUID();
    let queue: Promise<unknown> = Promise.resolve();
    const subscription = this.nc.subscribe(this.subjects.fileTransfer(id), {
      callback: (error, msg) => {
        if (error) return;
        this.touch(id);
        const op = msg.headers?.get(FILE_TRANSFER_OP_HEADER) ?? '';
        if (op === FILE_TRANSFER_OPS.abort) {
          void this.finish(id, true);
          return;
        }
        queue = queue.then(async () => {
          if (!this.open.has(id)) return;
          try {
            if ((await handler.handle(op, msg)) === 'done') await this.finish(id, false);
          } catch (failure) {
            respondError(msg, failure, this.logger);
            await this.finish(id, true);
          }
        });
      },
    });
    this.open.set(id, { subscription, handler, timer: this.stallTimer(id) });
    return id;
  }

  private touch(id: string): void {
    const transfer = this.open.get(id);
    if (transfer === undefined) return;
    clearTimeout(transfer.timer);
    transfer.timer = this.stallTimer(id);
  }

  private stallTimer(id: string): NodeJS.Timeout {
    return setTimeout(() => {
      this.logger.warn(`file transfer ${id} stalled for ${this.stallMs} ms: aborted`);
      void this.finish(id, true);
    }, this.stallMs).unref();
  }

  private async finish(id: string, abort: boolean): Promise<void> {
    const transfer = this.open.get(id);
    if (transfer === undefined) return;
    this.open.delete(id);
    clearTimeout(transfer.timer);
    transfer.subscription.unsubscribe();
    if (abort) await transfer.handler.abort().catch((error: unknown) => this.logger.error(`file transfer ${id} abort failed: ${(error as Error).message}`));
    transfer.handler.done();
  }

}

function unexpected(op: string): never {
  throw new DomainError('invalid_body', `unexpected transfer message ${JSON.stringify(op)}`);
}

/** A refusal as the transfer protocol carries it: the error header and a ServiceErrorPayload. */
function respondError(msg: Msg, failure: unknown, logger: Logger): void {
  if (msg.reply === undefined || msg.reply === '') return;
  const headers = natsHeaders();
  headers.set(FILE_TRANSFER_ERROR_HEADER, '1');
  msg.respond(JSON.stringify(serviceErrorPayloadOf(failure, logger)), { headers });
}
