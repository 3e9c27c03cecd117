import { Logger } from '@nestjs/common';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { encodeStreamFrame, type Subjects } from '@interns/contracts';
import { ensureStream, type StreamLimits } from '@interns/messaging';
import { chunkLogFailuresCounter } from './runs.metrics';

/** What keeps the run chunk stream's limits: its chunks outlive the longest run by RUN_REPLAY_RETENTION_MS. */
export interface ChunkLogSettings {
  runReplayRetentionMs: number;
  executionDeadlineMs: number;
  jetstreamMaxBytes: number;
  jetstreamReplicas: number;
}

/**
 * The run chunk stream (`<prefix>_run_chunks`, subjects `runs.chunks.<run_id>`): every chunk of every run, in
 * order, for the stream route to replay and follow. A chunk is dropped `max_age` after it was written, which is
 * RUN_REPLAY_RETENTION_MS after the longest run (EXECUTION_DEADLINE_MS) could end: the run's resource says
 * 410 `run_expired` from RUN_REPLAY_RETENTION_MS after the run's own end, before any of its chunks is gone. A run
 * whose transcript is purged earlier (TRANSCRIPT_RETENTION_MS, its intern deleted) has its subject purged then
 * (`retention/transcript-purger.ts`).
 */
export function ensureRunChunkStream(nc: NatsConnection, subjects: Subjects, settings: ChunkLogSettings): Promise<void> {
  const limits: StreamLimits = {
    maxAgeMs: settings.runReplayRetentionMs + settings.executionDeadlineMs,
    maxBytes: settings.jetstreamMaxBytes,
    replicas: settings.jetstreamReplicas,
  };
  return ensureStream(nc, subjects.runChunkStreamName, [subjects.runs.chunks('*')], limits);
}

/**
 * One run's chunk log: numbers its chunks from 1 (the SSE `id:`), appends each to the run chunk stream, and
 * ends with a done frame (`[DONE]` for its readers). Appends are pipelined, never awaited one by one: the
 * live chat stream does not wait for the log. A chunk the stream did not take is logged and counted; a reader
 * meets the gap and ends with `stream_severed`.
 */
export class RunChunkLog {
  private readonly logger = new Logger('RunChunkLog');
  private readonly pending = new Set<Promise<unknown>>();
  private seq: number;

  constructor(
    private readonly js: JetStreamClient,
    private readonly subject: string,
    /** The last chunk number already in the log (0 for a new run). */
    lastSeq = 0,
  ) {
    this.seq = lastSeq;
  }

  static of(nc: NatsConnection, subject: string, lastSeq = 0): RunChunkLog {
    return new RunChunkLog(jetstream(nc), subject, lastSeq);
  }

  /** Appends a chunk (its JSON); returns its number. */
  append(json: string): number {
    const seq = ++this.seq;
    this.publish(encodeStreamFrame(seq, 'chunk', json));
    return seq;
  }

  /** The run is over: its readers end with `[DONE]`. */
  end(): void {
    this.publish(encodeStreamFrame(this.seq + 1, 'done'));
  }

  /** Settles once every append so far was acknowledged (or failed). */
  async flushed(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private publish(frame: Uint8Array): void {
    const sent: Promise<unknown> = this.js
      .publish(this.subject, frame)
      .catch((error: unknown) => {
        chunkLogFailuresCounter.inc();
        this.logger.error(`chunk log ${this.subject} lost a frame: ${error instanceof Error ? error.message : String(error)}`);
      })
      .finally(() => this.pending.delete(sent));
    this.pending.add(sent);
  }
}
