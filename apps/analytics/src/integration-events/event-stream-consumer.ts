import { DurableStreamConsumer, type DurableStreamSource } from '@interns/messaging';
import { counter } from '@interns/service-runtime';
import type { FactsApplier } from '../facts/facts-applier';
import { type EventSource, MalformedEventError, parseIntegrationEvent, type ReceivedEvent } from './integration-event';

export interface EventStreamConsumerOptions extends DurableStreamSource {
  source: EventSource;
  applier: Pick<FactsApplier, 'apply'>;
}

const events = counter<'source' | 'outcome'>({
  name: 'analytics_integration_events_total',
  help: 'Integration events handled by the analytics consumer, by source service and outcome',
  labelNames: ['source', 'outcome'],
});

/**
 * The analytics consumer of one service's integration event stream (a DurableStreamConsumer), feeding the facts
 * tables: at least once in, exactly once applied (the applier records the event id in the transaction that
 * applies it, so a redelivery changes nothing). Malformed data may be a newer event shape than this replica
 * knows: it is kept, logged as an error, and offered again later.
 */
export class EventStreamConsumer {
  private readonly consumer: DurableStreamConsumer<ReceivedEvent>;

  constructor(options: EventStreamConsumerOptions) {
    const { source, applier } = options;
    this.consumer = new DurableStreamConsumer<ReceivedEvent>({
      ...options,
      name: 'analytics consumer',
      parse: parseIntegrationEvent,
      handle: async (event) => ({ settle: 'ack', outcome: await applier.apply(event) }),
      onOutcome: (outcome) => events.inc({ source, outcome }),
      failureLevel: (error) => (error instanceof MalformedEventError ? 'error' : 'warn'),
    });
  }

  /** Starts consuming in the background (start-up never waits for JetStream). */
  start(): void {
    this.consumer.start();
  }

  /** Finishes the message being applied (and acknowledges it), then stops pulling. */
  stop(): Promise<void> {
    return this.consumer.stop();
  }
}
