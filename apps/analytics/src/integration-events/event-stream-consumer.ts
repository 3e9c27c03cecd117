import { type DurableStreamSource, EventStreamConsumer } from '@interns/messaging';
import type { FactsApplier } from '../facts/facts-applier';
import { type EventSource, MalformedEventError, parseIntegrationEvent, type ReceivedEvent } from '../facts/integration-event';

export interface FactsConsumerOptions extends DurableStreamSource {
  source: EventSource;
  applier: Pick<FactsApplier, 'apply'>;
}

/**
 * The analytics consumer of one service's integration event stream, feeding the facts tables: at least once in,
 * exactly once applied (the applier records the event id in the transaction that applies it, so a redelivery
 * changes nothing). Malformed data may be a newer event shape than this replica knows: it is kept, logged as an
 * error, and offered again later.
 */
export function factsConsumer(options: FactsConsumerOptions): EventStreamConsumer<ReceivedEvent> {
  const { applier, ...source } = options;
  return new EventStreamConsumer<ReceivedEvent>({
    ...source,
    name: 'analytics consumer',
    metric: {
      name: 'analytics_integration_events_total',
      help: 'Integration events handled by the analytics consumer, by source service and outcome',
    },
    parse: parseIntegrationEvent,
    handle: async (event) => ({ settle: 'ack', outcome: await applier.apply(event) }),
    failureLevel: (error) => (error instanceof MalformedEventError ? 'error' : 'warn'),
  });
}
