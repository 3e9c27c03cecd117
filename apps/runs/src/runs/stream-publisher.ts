import type { NatsConnection } from '@nats-io/transport-node';
import { encodeStreamFrame } from '@interns/contracts';

/**
 * One response's frames on `runs.stream.<streamId>`: numbered from 1, with a heartbeat whenever the stream
 * has been quiet for `heartbeatMs`, so the gateway tells a slow run from a lost one. A chunk frame carries the
 * chunk's number in its run (the SSE `id:` the gateway writes).
 */
export class StreamPublisher {
  private seq = 0;
  private lastSentAt = Date.now();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
    readonly streamId: string,
    heartbeatMs: number,
  ) {
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastSentAt >= heartbeatMs) this.send(encodeStreamFrame(++this.seq, 'heartbeat'));
    }, Math.max(10, Math.floor(heartbeatMs / 2)));
    this.heartbeat.unref();
  }

  /** A chunk's JSON and its number in the run. */
  chunk(json: string, eventId: number): void {
    if (this.closed) return;
    this.send(encodeStreamFrame(++this.seq, 'chunk', json, eventId));
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
