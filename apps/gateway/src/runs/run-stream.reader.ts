import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { type ConsumerMessages, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { chunkIdOf, decodeStreamFrame, DomainError, type RunStreamGrant, type StreamFrame } from '@interns/contracts';
import { severedChunks } from '../chat/severed-chunks';
import { type RelayOutcome, SseRelay } from '../chat/sse-relay';
import { runStreamReaders } from './runs.metrics';

export interface RunStreamReaderOptions {
  nc: NatsConnection;
  /** The run chunk stream. */
  streamName: string;
  grant: RunStreamGrant;
  /** Chunks up to this number are not sent again (Last-Event-ID, `starting_after`). */
  afterSeq: number;
  response: ServerResponse;
  keepaliveIntervalMs: number;
  bufferLimitBytes: number;
  headers: Record<string, string>;
}

/**
 * One reader of a run's chunk log (`GET .../runs/{id}/stream`): an ordered JetStream consumer of the run's
 * subject replays the stored chunks, then delivers new ones as the run appends them, in one sequence, so
 * there is no seam between stored and live chunks to mend and nothing is lost or repeated there. Chunks up
 * to `afterSeq` are skipped; the rest are relayed with their `id:`; the log's done frame ends the response
 * with `[DONE]`. Closing the response only ends this reader (never the run). A gap (chunks dropped by the
 * stream's limits) or a log that stops short of its end is told as `stream_severed`.
 */
export class RunStreamReader {
  private readonly relay: SseRelay;
  private messages: ConsumerMessages | null = null;
  /** For a run that has ended: the number of the log's last frame, past which nothing will come. */
  private lastFrameSeq: number | null = null;

  constructor(private readonly options: RunStreamReaderOptions) {
    const { run } = options.grant;
    this.relay = new SseRelay({
      response: options.response,
      keepaliveIntervalMs: options.keepaliveIntervalMs,
      // The log has no heartbeats: a run may wait minutes on a question; keepalives hold the connection.
      heartbeatMs: null,
      bufferLimitBytes: options.bufferLimitBytes,
      headers: options.headers,
      afterSeq: options.afterSeq,
      severedChunks: () => severedChunks(chunkIdOf(randomUUID()), Math.floor(Date.now() / 1000), { model: run.model, sessionId: run.session_id }),
    });
  }

  /** Finds the log and starts its consumer; a refusal here is still a plain JSON answer (410 when it is gone). */
  async open(): Promise<void> {
    const { nc, streamName, grant } = this.options;
    if (grant.run.ended_at !== null) {
      const last = await (await jetstreamManager(nc)).streams.getMessage(streamName, { last_by_subj: grant.subject });
      if (last === null) throw new DomainError('run_expired', "the run's chunks are no longer kept");
      this.lastFrameSeq = decodeStreamFrame(last.data)?.seq ?? 0;
    }
    const consumer = await jetstream(nc).consumers.get(streamName, { filter_subjects: grant.subject });
    this.messages = await consumer.consume();
  }

  /** Relays until the run's `[DONE]`, the client leaving, or a severed log. */
  async follow(): Promise<RelayOutcome> {
    runStreamReaders.inc();
    this.relay.start();
    void this.pump();
    const outcome = await this.relay.finished;
    await this.messages?.close();
    runStreamReaders.dec();
    return outcome;
  }

  /** Ends the response with `stream_severed` (gateway shutdown): the client resumes through another gateway. */
  sever(): void {
    this.relay.sever();
  }

  private async pump(): Promise<void> {
    const messages = this.messages;
    if (messages === null) return;
    try {
      for await (const message of messages) {
        const frame = decodeStreamFrame(message.data);
        if (frame === null) return this.relay.accept(null);
        const done = this.relayFrame(frame);
        if (done) return;
        if (this.lastFrameSeq !== null && frame.seq >= this.lastFrameSeq) return this.relay.sever();
      }
    } catch {
      this.relay.sever();
    }
  }

  /** True once the response is over. */
  private relayFrame(frame: StreamFrame): boolean {
    const { afterSeq } = this.options;
    if (frame.kind === 'done') {
      // Numbered after the last chunk, which may be before the resume point: `[DONE]` follows whatever was sent.
      this.relay.accept({ ...frame, seq: Math.max(frame.seq, afterSeq + 1) });
      return true;
    }
    if (frame.seq > afterSeq) this.relay.accept({ ...frame, eventId: frame.seq });
    return false;
  }
}
