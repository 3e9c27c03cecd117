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
import type { EventRecorder } from './event-recorder';
import { type EventSource, parseReceivedEvent } from './received-event';

export interface EventStreamConsumerOptions {
  nats: NatsConnection;
  source: EventSource;
  /** The source's JetStream stream and subjects, exactly as its outbox relay creates them. */
  streamName: string;
  streamSubjects: string[];
  /** Shared by every webhooks replica: they split the stream's messages between them. */
  durableName: string;
  recorder: Pick<EventRecorder, 'record'>;
  /** Called after deliveries were recorded (and acknowledged): the delivery worker goes at once. */
  onRecorded?: () => void;
  /** How long a delivered message may go unacknowledged before JetStream delivers it again. */
  ackWaitMs?: number;
  /** A message not settled is offered again after this times its delivery count (at most a minute). */
  nakDelayMs?: number;
  /** Deliveries of a run event whose intern's workspace stays unknown before it is dropped (and counted). */
  maxUnroutableDeliveries?: number;
  batchSize?: number;
  /** First backoff after a failure to reach JetStream (doubles up to 5 s). */
  retryDelayMs?: number;
  logger?: WorkerLogger;
}

/** nats-server's answer to adding a stream that exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;
const MAX_NAK_DELAY_MS = 60_000;

const events = counter<'source' | 'outcome'>({
  name: 'interns_webhook_integration_events_total',
  help: 'Integration events handled by the webhooks consumer, by source service and outcome',
  labelNames: ['source', 'outcome'],
});

/**
 * A durable JetStream pull consumer over one service's integration event stream, turning its events into
 * deliveries (the same shape as analytics' consumer, docs/architecture.md "Webhooks").
 *
 * - A message is acknowledged only after the transaction that recorded its deliveries committed; a
 *   redelivery finds the event id and adds nothing. Unacknowledged messages come back after the ack wait,
 *   so no process restart loses an event.
 * - The consumer is durable and shared by every replica. It starts from the stream's first message: the
 *   lifecycle history fills the intern -> workspace map that routes run events.
 * - The stream may not exist yet: it is created with the relay's configuration (either side's add is a
 *   no-op for the other). Losing JetStream or the database never ends the loop; only `stop()` does.
 */
export class EventStreamConsumer {
  private readonly batchSize: number;
  private readonly nakDelayMs: number;
  private readonly maxUnroutableDeliveries: number;
  private readonly logger: WorkerLogger;
  private readonly worker: WorkerLoop;
  private messages: ConsumerMessages | null = null;

  constructor(private readonly options: EventStreamConsumerOptions) {
    this.batchSize = options.batchSize ?? 20;
    this.nakDelayMs = options.nakDelayMs ?? 1_000;
    this.maxUnroutableDeliveries = options.maxUnroutableDeliveries ?? 30;
    this.logger = options.logger ?? console;
    this.worker = new WorkerLoop({
      name: this.describeSelf(),
      round: () => this.consumeUntilClosed(),
      pollIntervalMs: 0,
      firstBackoffMs: options.retryDelayMs ?? 200,
      logger: this.logger,
    });
  }

  start(): void {
    this.worker.start();
  }

  /** Finishes the message in hand (and acknowledges it), then stops pulling. */
  async stop(): Promise<void> {
    const stopped = this.worker.stop();
    await this.messages?.close();
    await stopped;
  }

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
      event = parseReceivedEvent(message.data);
    } catch (error) {
      this.logger.error(`${this.describeSelf()}: dropping message ${message.seq} on ${message.subject}: ${describeError(error)}`);
      events.inc({ source, outcome: 'rejected' });
      // No reason text: servers before 2.11 ignore a +TERM that carries one.
      message.term();
      return;
    }
    const delay = Math.min(this.nakDelayMs * message.info.deliveryCount, MAX_NAK_DELAY_MS);
    try {
      const result = await this.options.recorder.record(event);
      if (result.settled) {
        message.ack();
        events.inc({ source, outcome: result.outcome });
        if (result.outcome === 'recorded') this.options.onRecorded?.();
        return;
      }
      if (result.outcome === 'unroutable' && message.info.deliveryCount >= this.maxUnroutableDeliveries) {
        this.logger.warn(`${this.describeSelf()}: dropping ${event.type} ${event.id}: ${result.reason}`);
        message.ack();
        events.inc({ source, outcome: 'dropped' });
        return;
      }
      this.logger.warn(`${this.describeSelf()}: ${event.type} ${event.id} held back: ${result.reason}`);
      events.inc({ source, outcome: result.outcome });
      message.nak(delay);
    } catch (error) {
      // The database is down or a race lost: offered again.
      this.logger.warn(`${this.describeSelf()}: event ${event.id} (${event.type}) not recorded: ${describeError(error)}`);
      events.inc({ source, outcome: 'failed' });
      message.nak(delay);
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
    return `webhooks consumer ${this.options.streamName}/${this.options.durableName}`;
  }
}

function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}
