import { counter } from '@interns/metrics';
import { DurableStreamConsumer, type DurableStreamConsumerOptions, type DurableStreamSource } from './durable-stream-consumer';

export interface EventStreamConsumerOptions<E extends { id: string; type: string }>
  extends DurableStreamSource,
    Pick<DurableStreamConsumerOptions<E>, 'name' | 'parse' | 'handle' | 'failureLevel'> {
  /** The service whose integration events these are (the metric's `source` label). */
  source: string;
  /** The consuming service's counter of handled events, labelled by `source` and `outcome`. */
  metric: { name: string; help: string };
}

/**
 * A consuming service's reader of one source's integration event stream (analytics' facts, webhooks' deliveries):
 * a DurableStreamConsumer (at least once in, settled only by the handler's verdict) whose every outcome is counted
 * by source. The services say only how to read an event and what to do with it.
 */
export class EventStreamConsumer<E extends { id: string; type: string }> {
  private readonly consumer: DurableStreamConsumer<E>;

  constructor(options: EventStreamConsumerOptions<E>) {
    const { source, metric, ...consumerOptions } = options;
    // The registry hands back the counter already registered under the name (one per service and process).
    const outcomes = counter<'source' | 'outcome'>({ ...metric, labelNames: ['source', 'outcome'] });
    this.consumer = new DurableStreamConsumer<E>({ ...consumerOptions, onOutcome: (outcome) => outcomes.inc({ source, outcome }) });
  }

  /** Starts consuming in the background (start-up never waits for JetStream). */
  start(): void {
    this.consumer.start();
  }

  /** Finishes the message in hand (and settles it), then stops pulling. */
  stop(): Promise<void> {
    return this.consumer.stop();
  }
}
