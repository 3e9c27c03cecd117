import {
  AckPolicy,
  type Consumer,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { describeError, WorkerLoop, type WorkerLogger } from '@interns/workers';

/** What a consumer made of one event: acknowledge it (done, or nothing to do), or have it offered again later. */
export interface EventVerdict {
  settle: 'ack' | 'nak';
  /** Counted by the consumer (`onOutcome`), e.g. `applied`, `duplicate`, `unroutable`. */
  outcome: string;
  /** Logged (warn) with a `nak`: why the event waits. */
  reason?: string;
}

export interface DurableStreamConsumerOptions<E extends { id: string; type: string }> {
  /** Names the consumer in its logs and worker description, e.g. `analytics consumer`. */
  name: string;
  nats: NatsConnection;
  /** The source's JetStream stream and subjects, exactly as its outbox relay creates them. */
  streamName: string;
  streamSubjects: string[];
  /** Shared by every replica of the consuming service: they split the stream's messages between them. */
  durableName: string;
  /** Reads a message; throwing drops it for good (no later version of the code could read it either). */
  parse: (data: Uint8Array) => E;
  /** What to do with an event (`deliveryCount`: how often JetStream has offered it); throwing offers it again later. */
  handle: (event: E, deliveryCount: number) => Promise<EventVerdict>;
  /** Every outcome, for the service's metrics: the handler's, `rejected` (unreadable) and `failed` (it threw). */
  onOutcome: (outcome: string) => void;
  /** How loudly a failed handle is logged (e.g. `error` for data a replica cannot read); default `warn`. */
  failureLevel?: (error: unknown) => 'warn' | 'error';
  /** How long a delivered message may go unacknowledged before JetStream delivers it again. */
  ackWaitMs?: number;
  /** An event not settled is offered again after this times its delivery count (at most a minute). */
  nakDelayMs?: number;
  /** Messages pulled ahead of processing. */
  batchSize?: number;
  /** First backoff after a failure to reach JetStream (doubles up to 5 s). */
  retryDelayMs?: number;
  logger?: WorkerLogger;
}

/** Where and how a consumer reads (everything but what it does with the events), for the services' own option types. */
export type DurableStreamSource = Omit<
  DurableStreamConsumerOptions<{ id: string; type: string }>,
  'name' | 'parse' | 'handle' | 'onOutcome' | 'failureLevel'
>;

/** nats-server's answer to adding a stream that exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;
const MAX_NAK_DELAY_MS = 60_000;

/**
 * A durable JetStream pull consumer over one service's integration event stream (analytics' facts, webhooks'
 * deliveries).
 *
 * - At least once in: a message is acknowledged only once its handler settled it (having committed what it
 *   wrote, with the event id, so a redelivery changes nothing). Unacknowledged messages come back after the ack
 *   wait, so no process restart loses an event.
 * - The consumer is durable with explicit acks, from the stream's first message: whatever is published while
 *   every replica is down is delivered when one comes back. Replicas share the one durable and split the work.
 * - The stream may not exist yet (its relay creates it when its service starts): it is created here with the
 *   relay's subjects, which makes either side's creation a no-op for the other.
 * - Losing JetStream or the database never ends the loop: an event not settled is nak'd with a backoff and a
 *   failed pull is retried from the consumer's position; only `stop()` ends it.
 */
export class DurableStreamConsumer<E extends { id: string; type: string }> {
  private readonly batchSize: number;
  private readonly nakDelayMs: number;
  private readonly logger: WorkerLogger;
  private readonly worker: WorkerLoop;
  private messages: ConsumerMessages | null = null;

  constructor(private readonly options: DurableStreamConsumerOptions<E>) {
    this.batchSize = options.batchSize ?? 20;
    this.nakDelayMs = options.nakDelayMs ?? 1_000;
    this.logger = options.logger ?? console;
    this.worker = new WorkerLoop({
      name: this.describeSelf(),
      // Every replica consumes: the durable consumer splits the messages between them.
      round: () => this.consumeUntilClosed(),
      pollIntervalMs: 0,
      firstBackoffMs: options.retryDelayMs ?? 200,
      logger: this.logger,
    });
  }

  /** Starts consuming in the background (start-up never waits for JetStream). */
  start(): void {
    this.worker.start();
  }

  /** Finishes the message in hand (and settles it), then stops pulling. */
  async stop(): Promise<void> {
    const stopped = this.worker.stop();
    await this.messages?.close();
    await stopped;
  }

  /** One subscription, from the durable consumer's position until it closes (stop) or fails. */
  private async consumeUntilClosed(): Promise<'more'> {
    try {
      const consumer = await this.ensureConsumer();
      if (this.worker.isStopping) return 'more';
      const messages = await consumer.consume({ max_messages: this.batchSize });
      this.messages = messages;
      if (this.worker.isStopping) await messages.close();
      this.worker.markProgress();
      for await (const message of messages) await this.settle(message);
      return 'more';
    } finally {
      this.messages = null;
    }
  }

  private async settle(message: JsMsg): Promise<void> {
    let event: E;
    try {
      event = this.options.parse(message.data);
    } catch (error) {
      this.logger.error(`${this.describeSelf()}: dropping message ${message.seq} on ${message.subject}: ${describeError(error)}`);
      this.options.onOutcome('rejected');
      // No reason text: servers before 2.11 ignore a +TERM that carries one.
      message.term();
      return;
    }
    const retryIn = Math.min(this.nakDelayMs * message.info.deliveryCount, MAX_NAK_DELAY_MS);
    try {
      const verdict = await this.options.handle(event, message.info.deliveryCount);
      if (verdict.settle === 'ack') {
        message.ack();
      } else {
        this.logger.warn(`${this.describeSelf()}: ${event.type} ${event.id} held back: ${verdict.reason ?? verdict.outcome}`);
        message.nak(retryIn);
      }
      this.options.onOutcome(verdict.outcome);
    } catch (error) {
      const level = this.options.failureLevel?.(error) ?? 'warn';
      this.logger[level](`${this.describeSelf()}: event ${event.id} (${event.type}) not handled: ${describeError(error)}`);
      this.options.onOutcome('failed');
      message.nak(retryIn);
    }
  }

  /** The stream (as its relay would create it) and the durable consumer, each created when missing. */
  private async ensureConsumer(): Promise<Consumer> {
    const { nats, streamName, durableName } = this.options;
    const jsm = await jetstreamManager(nats);
    await this.ensureStream(jsm);
    try {
      await jsm.consumers.info(streamName, durableName);
    } catch (error) {
      if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw error;
      // Adding a consumer that exists with the same configuration succeeds: replicas may race here.
      await jsm.consumers.add(streamName, {
        durable_name: durableName,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(this.options.ackWaitMs ?? 10_000),
        max_deliver: -1,
      });
      this.logger.log(`${this.describeSelf()}: created durable consumer`);
    }
    return jetstream(nats).consumers.get(streamName, durableName);
  }

  private async ensureStream(jsm: JetStreamManager): Promise<void> {
    const { streamName: name, streamSubjects: subjects } = this.options;
    try {
      await jsm.streams.info(name);
    } catch (error) {
      if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error;
      try {
        await jsm.streams.add({ name, subjects });
      } catch (addError) {
        if (!isApiError(addError, STREAM_NAME_IN_USE)) throw addError;
      }
    }
  }

  private describeSelf(): string {
    return `${this.options.name} ${this.options.streamName}/${this.options.durableName}`;
  }
}

function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}
