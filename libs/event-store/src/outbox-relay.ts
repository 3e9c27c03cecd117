import { jetstream, JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { DEFAULT_STREAM_LIMITS, ensureStream, type StreamLimits } from '@interns/messaging';
import { LeaderLease, type RoundOutcome, WorkerLoop, type WorkerLogger, type WorkSignal } from '@interns/workers';
import type { StoredEvent } from './event.types';
import { checkpointOf, EventTail, type TailCheckpoint } from './event-tail';
import { eventStoreTables } from './event-store.sql';
import { OutboxRelayMetrics, type ParkReason } from './outbox-relay.metrics';

/** A message the relay publishes for a committed event. */
export interface OutboxMessage {
  subject: string;
  /** JetStream's `Nats-Msg-Id`: the same on every republish of this message, so the stream drops repeats. */
  msgId: string;
  payload: string;
}


export interface OutboxRelayOptions {
  dataSource: DataSource;
  schema: string;
  nats: NatsConnection;
  /** JetStream stream to publish into; created at start when missing. */
  streamName: string;
  streamSubjects: string[];
  /** Applied when the relay adds the stream, and brought to an existing stream that differs; default DEFAULT_STREAM_LIMITS. */
  streamLimits?: StreamLimits;
  /** The messages a committed event stands for, in order (none is fine); `reader` is the relay's connection. */
  messagesFor: (event: StoredEvent, reader: EntityManager) => Promise<OutboxMessage[]>;
  /** Row in `<schema>.checkpoints` holding how far this relay has published. */
  checkpointName: string;
  pollIntervalMs?: number;
  /** Woken by this process's own commits (the command handler's `onAppended`): they go out without waiting for a poll. */
  signal?: WorkSignal;
  batchSize?: number;
  logger?: WorkerLogger;
  /** The `relay` label of its metrics; default `<schema>/<checkpointName>`. */
  metricsLabel?: string;
}

/** nats-server's answer to a message larger than the stream's `max_msg_size`. */
const MESSAGE_SIZE_EXCEEDS_MAXIMUM = 10054;

/**
 * Publishes what committed events stand for (`messagesFor`) to JetStream, in tail order, at least once.
 *
 * - One publisher per schema and checkpoint: the leader holds a session-level advisory lock on a dedicated
 *   pooled connection and also reads and checkpoints through it, so losing that connection ends both the
 *   lock and the publishing. Standby replicas retry the lock every poll interval.
 * - Each message goes out with its stable `msgID`; the checkpoint is saved after the whole batch. A crash
 *   between the two republishes the batch: JetStream drops repeats inside its duplicate window and
 *   consumers dedupe by message id beyond it.
 * - A message that fails because of what it is is parked, never retried: NATS refusing it (larger than the
 *   connection's max payload or the stream's max message size), or `messagesFor` throwing while the database
 *   answers (a translator that cannot make sense of one event). The relay records it in `<schema>.parked_messages`,
 *   counts it (`interns_outbox_parked_total`), logs a warning and goes on, so one event never stalls the rest.
 * - Any other failure (broker down, timeouts, database gone) gives up leadership, backs off and starts again
 *   from the saved checkpoint. The loop only ends through `stop()`.
 */
export class OutboxRelay {
  private readonly tail: EventTail;
  private readonly js: JetStreamClient;
  private readonly batchSize: number;
  private readonly worker: WorkerLoop;
  private readonly metrics: OutboxRelayMetrics;

  private started = false;
  /** undefined: not loaded since taking leadership; null: nothing published yet. */
  private checkpoint: TailCheckpoint | null | undefined;
  private streamReady = false;
  private readonly parkedMessages: string;

  constructor(private readonly options: OutboxRelayOptions) {
    this.tail = new EventTail(options.dataSource, options.schema);
    this.js = jetstream(options.nats);
    this.batchSize = options.batchSize ?? 100;
    const leaseName = `${options.schema}/${options.checkpointName}`;
    this.worker = new WorkerLoop({
      name: `outbox relay ${options.checkpointName}`,
      lease: new LeaderLease(options.dataSource, ['outbox-relay', leaseName]),
      pollIntervalMs: options.pollIntervalMs ?? 100,
      signal: options.signal,
      logger: options.logger,
      round: (leader) => this.publishNextBatch(leader),
      // Another replica may have published meanwhile: start again from the saved checkpoint.
      onLeading: () => (this.checkpoint = undefined),
      onFailure: () => {
        this.checkpoint = undefined;
        this.streamReady = false;
      },
    });
    this.metrics = new OutboxRelayMetrics(options.metricsLabel ?? leaseName);
    this.parkedMessages = eventStoreTables(options.schema).parkedMessages;
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
    this.worker.start();
    this.metrics.watchLag(this);
  }

  /** Lets the batch in flight finish (publish and checkpoint), releases leadership, resolves. */
  async stop(): Promise<void> {
    this.metrics.unwatchLag(this);
    await this.worker.stop();
    this.started = false;
  }

  get isLeader(): boolean {
    return this.worker.isLeader;
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

  /** One batch through the leader's connection; idle when there is nothing more to publish right now. */
  private async publishNextBatch(leader: QueryRunner): Promise<RoundOutcome> {
    if (!this.streamReady) await this.ensureStream();
    if (this.checkpoint === undefined) {
      this.checkpoint = await this.tail.loadCheckpoint(this.options.checkpointName, leader.manager);
    }
    const { events: batch, heldBack } = await this.tail.readBatchAfter(this.checkpoint, this.batchSize, leader.manager);
    // Held back: a commit is there but waits on an older transaction elsewhere; the loop looks again soon.
    if (batch.length === 0) return heldBack ? 'held' : 'idle';
    // One at a time, so the stream holds messages in tail order.
    let published = 0;
    for (const event of batch) {
      const messages = await this.translate(event, leader);
      if (!messages) continue;
      for (const message of messages) {
        try {
          await this.js.publish(message.subject, message.payload, { msgID: message.msgId });
          published += 1;
        } catch (error) {
          if (!isRefusedMessage(error)) throw error;
          await this.park(leader, event, 'refused', error, message);
        }
      }
    }
    const last = batch[batch.length - 1];
    await this.tail.saveCheckpoint(this.options.checkpointName, last, leader.manager);
    this.checkpoint = checkpointOf(last);
    this.metrics.published(published);
    if (heldBack) return 'held';
    return batch.length < this.batchSize ? 'idle' : 'more';
  }

  /** What `event` stands for; null when it was parked as untranslatable. */
  private async translate(event: StoredEvent, leader: QueryRunner): Promise<OutboxMessage[] | null> {
    try {
      return await this.options.messagesFor(event, leader.manager);
    } catch (error) {
      // A query that failed, or a connection that no longer answers, is the database's doing: retry as before.
      if (isDatabaseError(error) || !(await answers(leader))) throw error;
      await this.park(leader, event, 'untranslatable', error, null);
      return null;
    }
  }

  private async park(
    leader: QueryRunner,
    event: StoredEvent,
    reason: ParkReason,
    error: unknown,
    message: OutboxMessage | null,
  ): Promise<void> {
    const why = `${reason}: ${error instanceof Error ? error.message : String(error)}`;
    await leader.manager.query(
      `INSERT INTO ${this.parkedMessages}
         (checkpoint_name, event_id, global_position, stream_id, event_type, subject, msg_id, payload_bytes, reason)
       VALUES ($1, $2::uuid, $3::bigint, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (checkpoint_name, event_id, (coalesce(msg_id, ''))) DO NOTHING`,
      [
        this.options.checkpointName,
        event.eventId,
        event.globalPosition,
        event.streamId,
        event.type,
        message?.subject ?? null,
        message?.msgId ?? null,
        message ? Buffer.byteLength(message.payload) : null,
        why,
      ],
    );
    this.metrics.parked(reason);
    this.options.logger?.warn(
      `parked ${message ? `message ${message.msgId} (${Buffer.byteLength(message.payload)} bytes) of ` : ''}` +
        `event ${event.eventId} (${event.type}, stream ${event.streamId}, position ${event.globalPosition}) ` +
        `in ${this.parkedMessages}, going on: ${why}`,
    );
  }

  private async ensureStream(): Promise<void> {
    const { nats, streamName, streamSubjects, streamLimits } = this.options;
    await ensureStream(nats, streamName, streamSubjects, streamLimits ?? DEFAULT_STREAM_LIMITS);
    this.streamReady = true;
  }
}

/**
 * NATS refused the message for what it is, so publishing it again would fail the same way: larger than the
 * connection's max payload (checked by the client before sending) or the stream's max message size.
 */
export function isRefusedMessage(error: unknown): boolean {
  if (error instanceof JetStreamApiError) return error.code === MESSAGE_SIZE_EXCEEDS_MAXIMUM;
  return error instanceof Error && error.name === 'InvalidArgumentError' && error.message.includes('max_payload');
}

/** TypeORM's failed query (a PostgreSQL error) or a driver or socket error carrying a code. */
function isDatabaseError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === 'QueryFailedError' || typeof (error as { code?: unknown }).code === 'string';
}

async function answers(leader: QueryRunner): Promise<boolean> {
  try {
    await leader.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}
