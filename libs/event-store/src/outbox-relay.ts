import { jetstream, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource, QueryRunner } from 'typeorm';
import type { EventMetadata, StoredEvent } from './event.types';
import { checkpointOf, EventTail, type TailCheckpoint } from './event-tail';
import { LeaderLease } from './leader-lease';
import { OutboxRelayMetrics } from './outbox-relay.metrics';

/** Compatible with Nest's `Logger` and with `console`. */
export interface RelayLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface OutboxRelayOptions {
  dataSource: DataSource;
  schema: string;
  nats: NatsConnection;
  /** JetStream stream to publish into; created at start when missing. */
  streamName: string;
  streamSubjects: string[];
  subjectFor: (event: StoredEvent) => string;
  /** Row in `<schema>.checkpoints` holding how far this relay has published. */
  checkpointName: string;
  pollIntervalMs?: number;
  batchSize?: number;
  logger?: RelayLogger;
  /** The `relay` label of its metrics; default `<schema>/<checkpointName>`. */
  metricsLabel?: string;
}

/** The JSON body of every relayed integration event. */
export interface RelayedEventMessage {
  event_id: string;
  type: string;
  stream_id: string;
  stream_version: number;
  schema_version: number;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  created_at: string;
}

export function relayedEventMessage(event: StoredEvent): RelayedEventMessage {
  return {
    event_id: event.eventId,
    type: event.type,
    stream_id: event.streamId,
    stream_version: event.streamVersion,
    schema_version: event.schemaVersion,
    data: event.data,
    metadata: event.metadata,
    created_at: event.createdAt.toISOString(),
  };
}

/** nats-server's answer to adding a stream that exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;
const MAX_BACKOFF_MS = 5_000;

/**
 * Publishes committed events to JetStream, in tail order, at least once.
 *
 * - One publisher per schema and checkpoint: the leader holds a session-level advisory lock on a dedicated
 *   pooled connection and also reads and checkpoints through it, so losing that connection ends both the
 *   lock and the publishing. Standby replicas retry the lock every poll interval.
 * - Each event goes out with `msgID` = event id; the checkpoint is saved after the whole batch. A crash
 *   between the two republishes the batch: JetStream drops repeats inside its duplicate window and
 *   consumers dedupe by event id beyond it.
 * - Any failure (broker down, database gone, `subjectFor` throwing) gives up leadership, backs off and
 *   starts again from the saved checkpoint. The loop only ends through `stop()`.
 */
export class OutboxRelay {
  private readonly tail: EventTail;
  private readonly js: JetStreamClient;
  private readonly pollIntervalMs: number;
  private readonly batchSize: number;
  private readonly logger: RelayLogger;
  private readonly lease: LeaderLease;
  private readonly metrics: OutboxRelayMetrics;

  private started = false;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  /** undefined: not loaded since taking leadership; null: nothing published yet. */
  private checkpoint: TailCheckpoint | null | undefined;
  private streamReady = false;

  constructor(private readonly options: OutboxRelayOptions) {
    this.tail = new EventTail(options.dataSource, options.schema);
    this.js = jetstream(options.nats);
    this.pollIntervalMs = options.pollIntervalMs ?? 100;
    this.batchSize = options.batchSize ?? 100;
    this.logger = options.logger ?? console;
    this.lease = new LeaderLease(options.dataSource, ['outbox-relay', `${options.schema}/${options.checkpointName}`]);
    this.metrics = new OutboxRelayMetrics(options.metricsLabel ?? `${options.schema}/${options.checkpointName}`);
  }

  /** Ensures the JetStream stream, then starts the publishing loop in the background. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    try {
      await this.ensureStream();
    } catch (error) {
      this.started = false;
      throw error;
    }
    this.stopping = false;
    this.loop = this.run();
    this.metrics.watchLag(this);
  }

  /** Lets the batch in flight finish (publish and checkpoint), releases leadership, resolves. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.metrics.unwatchLag(this);
    this.wake?.();
    await this.loop;
    this.loop = null;
    this.started = false;
  }

  get isLeader(): boolean {
    return this.lease.isLeader;
  }

  /** Events committed but not yet published (per the saved checkpoint), from any replica. */
  async lag(): Promise<number> {
    return this.tail.countAfter(await this.tail.loadCheckpoint(this.options.checkpointName));
  }

  /**
   * Age in seconds of the oldest event committed but not yet published (per the saved checkpoint), 0 when
   * caught up; read from the database, so it keeps growing while the relay is stalled or another replica leads.
   */
  async lagSeconds(): Promise<number> {
    return this.tail.backlogAgeSeconds(await this.tail.loadCheckpoint(this.options.checkpointName));
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let idle: boolean;
      try {
        idle = await this.publishNextBatch();
        failures = 0;
      } catch (error) {
        failures += 1;
        const delay = Math.min(this.pollIntervalMs * 2 ** failures, MAX_BACKOFF_MS);
        this.logger.warn(
          `outbox relay ${this.options.checkpointName}: ${describe(error)}; retrying from the checkpoint in ${delay} ms`,
        );
        this.streamReady = false;
        await this.resign();
        await this.sleep(delay);
        continue;
      }
      if (idle) await this.sleep(this.pollIntervalMs);
    }
    await this.resign();
  }

  /** Returns true when there is nothing more to publish right now (or another replica leads). */
  private async publishNextBatch(): Promise<boolean> {
    const runner = await this.lead();
    if (!runner) return true;
    if (!this.streamReady) await this.ensureStream();
    if (this.checkpoint === undefined) {
      this.checkpoint = await this.tail.loadCheckpoint(this.options.checkpointName, runner.manager);
    }
    const batch = await this.tail.readAfter(this.checkpoint, this.batchSize, runner.manager);
    if (batch.length === 0) return true;
    // One at a time, so the stream holds events in tail order.
    for (const event of batch) {
      await this.js.publish(this.options.subjectFor(event), JSON.stringify(relayedEventMessage(event)), {
        msgID: event.eventId,
      });
    }
    const last = batch[batch.length - 1];
    await this.tail.saveCheckpoint(this.options.checkpointName, last, runner.manager);
    this.checkpoint = checkpointOf(last);
    this.metrics.published(batch.length);
    return batch.length < this.batchSize;
  }

  /** The leader's connection, taking the lock when free; null while another instance leads. */
  private async lead(): Promise<QueryRunner | null> {
    const wasLeader = this.lease.isLeader;
    const runner = await this.lease.acquire();
    if (runner && !wasLeader) {
      this.checkpoint = undefined;
      this.logger.log(`outbox relay ${this.options.checkpointName}: publishing (leader)`);
    }
    return runner;
  }

  private async resign(): Promise<void> {
    this.checkpoint = undefined;
    await this.lease.resign();
  }

  /** Adds the stream when missing; tolerates another replica adding it at the same moment. */
  private async ensureStream(): Promise<void> {
    const jsm = await jetstreamManager(this.options.nats);
    const { streamName: name, streamSubjects: subjects } = this.options;
    try {
      await jsm.streams.info(name);
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
      try {
        await jsm.streams.add({ name, subjects });
      } catch (addError) {
        if (!(addError instanceof JetStreamApiError && addError.code === STREAM_NAME_IN_USE)) throw addError;
        await jsm.streams.info(name);
      }
    }
    this.streamReady = true;
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
