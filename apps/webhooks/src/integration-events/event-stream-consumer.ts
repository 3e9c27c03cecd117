import { type DurableStreamSource, EventStreamConsumer, type EventVerdict } from '@interns/messaging';
import type { EventRecorder } from './event-recorder';
import { type EventSource, parseReceivedEvent, type ReceivedEvent } from './received-event';

export interface DeliveriesConsumerOptions extends DurableStreamSource {
  source: EventSource;
  recorder: Pick<EventRecorder, 'record'>;
  /** Called after deliveries were recorded (and acknowledged): the delivery worker goes at once. */
  onRecorded?: () => void;
  /** Deliveries of a run event whose intern's workspace stays unknown before it is dropped (and counted). */
  maxUnroutableDeliveries?: number;
}

/**
 * The webhooks consumer of one service's integration event stream, turning its events into deliveries. A message
 * is acknowledged only after the transaction that recorded its deliveries committed; a redelivery finds the event
 * id and adds nothing. It starts from the stream's first message: the lifecycle history fills the intern ->
 * workspace map that routes run events. A run event whose intern's workspace stays unknown is offered again, and
 * dropped (counted) after `maxUnroutableDeliveries`.
 */
export function deliveriesConsumer(options: DeliveriesConsumerOptions): EventStreamConsumer<ReceivedEvent> {
  const { recorder, onRecorded, maxUnroutableDeliveries = 30, ...source } = options;
  return new EventStreamConsumer<ReceivedEvent>({
    ...source,
    name: 'webhooks consumer',
    metric: {
      name: 'interns_webhook_integration_events_total',
      help: 'Integration events handled by the webhooks consumer, by source service and outcome',
    },
    parse: parseReceivedEvent,
    handle: async (event, deliveryCount): Promise<EventVerdict> => {
      const result = await recorder.record(event);
      if (result.settled) {
        if (result.outcome === 'recorded') onRecorded?.();
        return { settle: 'ack', outcome: result.outcome };
      }
      if (result.outcome === 'unroutable' && deliveryCount >= maxUnroutableDeliveries) {
        (options.logger ?? console).warn(`webhooks consumer: dropping ${event.type} ${event.id}: ${result.reason}`);
        return { settle: 'ack', outcome: 'dropped' };
      }
      return { settle: 'nak', outcome: result.outcome, reason: result.reason };
    },
  });
}
