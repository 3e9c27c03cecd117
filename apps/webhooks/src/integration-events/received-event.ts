import { INTEGRATION_EVENT_SOURCES, type IntegrationEventSource, parseIntegrationEvent, type ReceivedIntegrationEvent } from '@interns/contracts';

/** The services whose integration events webhooks consumes (one JetStream stream each). */
export const EVENT_SOURCES = INTEGRATION_EVENT_SOURCES;
export type EventSource = IntegrationEventSource;

/**
 * An integration event as received: the envelope is checked on receipt (`parseIntegrationEvent`); the `data`
 * keys a payload takes are checked where the payload is built, since another build may send other shapes.
 */
export type ReceivedEvent = ReceivedIntegrationEvent;

export const parseReceivedEvent = parseIntegrationEvent;
