import type { NatsConnection } from '@nats-io/transport-node';
import { ChunkBuilder, chunkIdOf, encodeStreamFrame } from '@interns/contracts';
import type { ChatChunk } from '@interns/contracts';

/**
 * One response's frames on `runs.stream.<streamId>`: numbered from 1, with a heartbeat whenever the stream
 * has been quiet for `heartbeatMs`, so the gateway tells a slow run from a lost one.
 */
export class StreamPublisher {
  readonly chunks: ChunkBuilder;
  private seq = 0;
  private lastSentAt = Date.now();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
    readonly streamId: string,
    created: number,
    model: string,
    heartbeatMs: number,
  ) {
    this.chunks = new ChunkBuilder({ id: chunkIdOf(streamId), model, created });
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastSentAt >= heartbeatMs) this.send(encodeStreamFrame(++this.seq, 'heartbeat'));
    }, Math.max(10, Math.floor(heartbeatMs / 2)));
    this.heartbeat.unref();
  }

  chunk(chunk: ChatChunk): void {
    if (this.closed) return;
    this.send(encodeStreamFrame(++this.seq, 'chunk', JSON.stringify(chunk)));
  }

  /** `[DONE]`: the response is complete. */
  done(): void {
    if (this.closed) return;
    this.send(encodeStreamFrame(++this.seq, 'done'));
    this.close();
  }

  /** Stops without a word (the client is gone). */
  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
  }

  private send(frame: Uint8Array): void {
    this.lastSentAt = Date.now();
    this.nc.publish(this.subject, frame);
  }
}
