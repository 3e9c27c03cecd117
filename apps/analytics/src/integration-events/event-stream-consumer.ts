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
import { counter } from '@interns/service-runtime';
import { describeError, WorkerLoop, type WorkerLogger } from '@interns/workers';
import type { FactsApplier } from '../facts/facts-applier';
import { type EventSource, MalformedEventError, parseIntegrationEvent } from './integration-event';

export interface EventStreamConsumerOptions {
  nats: NatsConnection;
  source: EventSource;
  /** The source's JetStream stream and subjects, exactly as its outbox relay creates them. */
  streamName: string;
  streamSubjects: string[];
  /** Shared by every replica of the consuming service: they split the stream's messages between them. */
  durableName: string;
  applier: Pick<FactsApplier, 'apply'>;
  /** How long a delivered message may go unacknowledged before JetStream delivers it again. */
  ackWaitMs?: number;
  /** A failed apply is offered again after this times its delivery count (at most a minute). */
  nakDelayMs?: number;
  /** Messages pulled ahead of processing. */
  batchSize?: number;
  /** First backoff after a failure to reach JetStream (doubles up to 5 s). */
  retryDelayMs?: number;
  logger?: WorkerLogger;
}

/** nats-server's answer to adding a stream that exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;
const MAX_NAK_DELAY_MS = 60_000;

const events = counter<'source' | 'outcome'>({
  name: 'analytics_integration_events_total',
  help: 'Integration events handled by the analytics consumer, by source service and outcome',
  labelNames: ['source', 'outcome'],
});

/**
 * A durable JetStream pull consumer over one service's integration event stream, feeding the facts tables.
 *
 * - At least once in, exactly once applied: a message is acknowledged only after the transaction that
 *   applied it (and recorded its event id) committed; a redelivery finds the id and changes nothing.
 * - The consumer is durable with explicit acks, so whatever is published while every replica is down is
 *   delivered when one comes back. Replicas share the one durable consumer and split the work.
 * - The stream may not exist yet (its relay creates it when its service starts): it is created here with
 *   the relay's configuration, which makes either side's creation a no-op for the other.
 * - Losing JetStream or the database never ends the loop: a failed apply is nak'd with a backoff and a
 *   failed pull is retried from the consumer's position; only `stop()` ends it.
 */
export class EventStreamConsumer {
  private readonly ackWaitMs: number;
  private readonly batchSize: number;
  private readonly nakDelayMs: number;
  private readonly logger: WorkerLogger;
  private readonly worker: WorkerLoop;
  private messages: ConsumerMessages | null = null;

  constructor(private readonly options: EventStreamConsumerOptions) {
    this.ackWaitMs = options.ackWaitMs ?? 10_000;
    this.batchSize = options.batchSize ?? 20;
    this.nakDelayMs = options.nakDelayMs ?? 1_000;
    this.logger = options.logger ?? console;
    this.worker = new WorkerLoop({
      name: `analytics consumer ${options.streamName}/${options.durableName}`,
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

  /** Finishes the message being applied (and acknowledges it), then stops pulling. */
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
      for await (const message of messages) await this.handle(message);
      return 'more';
    } finally {
      this.messages = null;
    }
  }

  private async handle(message: JsMsg): Promise<void> {
    const { source } = this.options;
    let event;
    try {
      event = parseIntegrationEvent(message.data);
    } catch (error) {
      // Not an integration event at all: no later version of this code could apply it either.
      this.logger.error(`${this.describeSelf()}: dropping message ${message.seq} on ${message.subject}: ${describeError(error)}`);
      events.inc({ source, outcome: 'rejected' });
      // No reason text: servers before 2.11 ignore a +TERM that carries one.
      message.term();
      return;
    }
    try {
      const outcome = await this.options.applier.apply(event);
      message.ack();
      events.inc({ source, outcome });
    } catch (error) {
      // Malformed data may be a newer event shape than this replica knows: kept, and offered again later.
      const log = error instanceof MalformedEventError ? this.logger.error : this.logger.warn;
      log.call(this.logger, `${this.describeSelf()}: event ${event.id} (${event.type}) not applied: ${describeError(error)}`);
      events.inc({ source, outcome: 'failed' });
      message.nak(Math.min(this.nakDelayMs * message.info.deliveryCount, MAX_NAK_DELAY_MS));
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
        ack_wait: nanos(this.ackWaitMs),
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
    return `analytics consumer ${this.options.streamName}/${this.options.durableName}`;
  }
}

function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}
