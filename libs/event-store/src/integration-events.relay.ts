import type { DataSource, EntityManager } from 'typeorm';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  INTEGRATION_EVENT_TYPES,
  type IntegrationEvent,
  type IntegrationEventData,
  type IntegrationEventType,
  type ServiceName,
  type Subjects,
} from '@interns/contracts';
import type { WorkerLogger, WorkSignal } from '@interns/workers';
import type { StoredEvent } from './event.types';
import { integrationEventId } from './integration-event-id';
import type { StreamLimits } from '@interns/messaging';
import { type OutboxMessage, OutboxRelay } from './outbox-relay';

/**
 * Row name in `<schema>.checkpoints`. Every service uses it in its own schema: checkpoints are per schema and
 * the relay's leader lock is keyed by `<schema>/<checkpoint>`, so relays of different services never meet.
 */
export const INTEGRATION_EVENTS_CHECKPOINT = 'integration-events';

/** What a translator says an event stands for; the relay adds what comes from the source event (id, time ...). */
export type IntegrationEventDraft = {
  [T in IntegrationEventType]: { type: T; workspace_id: string | null; data: IntegrationEventData[T] };
}[IntegrationEventType];

/** Turns a service's own committed events into the integration events they stand for. */
export interface IntegrationEventTranslator {
  /** In order; none when the event is nothing public. `reader` reads the service's schema on the relay's connection. */
  translate(event: StoredEvent, reader: EntityManager): Promise<IntegrationEventDraft[]>;
}

export interface IntegrationEventsRelayOptions {
  service: ServiceName;
  /** The service's event store schema. */
  schema: string;
  dataSource: DataSource;
  nats: NatsConnection;
  subjects: Subjects;
  translator: IntegrationEventTranslator;
  /** JETSTREAM_MAX_AGE_MS, JETSTREAM_MAX_BYTES, JETSTREAM_REPLICAS of the config. */
  streamLimits?: StreamLimits;
  /** See OutboxRelayOptions.signal. */
  signal?: WorkSignal;
  logger?: WorkerLogger;
}

/**
 * Publishes a service's integration events (`libs/contracts` INTEGRATION_EVENT_TYPES) to JetStream stream
 * `<prefix>_<service>_events`, translated from its committed events: `intern.status_changed` on
 * `<prefix>.evt.lifecycle.intern.status_changed`, `Nats-Msg-Id` = the integration event's id, derived from the
 * source event's. Never from a handler: the relay tails the events table after commit, so nothing is published
 * that did not commit and nothing committed is lost; one replica publishes at a time. Nest calls the lifecycle
 * hooks of a provider built from this class.
 */
export class IntegrationEventsRelay {
  private readonly relay: OutboxRelay;

  constructor(private readonly options: IntegrationEventsRelayOptions) {
    const { service, subjects } = options;
    this.relay = new OutboxRelay({
      dataSource: options.dataSource,
      schema: options.schema,
      nats: options.nats,
      streamName: subjects.eventStreamName(service),
      streamSubjects: [subjects.eventsOf(service)],
      streamLimits: options.streamLimits,
      messagesFor: (event, reader) => this.messagesFor(event, reader),
      checkpointName: INTEGRATION_EVENTS_CHECKPOINT,
      signal: options.signal,
      logger: options.logger,
      metricsLabel: service,
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.relay.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.relay.stop();
  }

  /** Events committed but not yet published. */
  lag(): Promise<number> {
    return this.relay.lag();
  }

  private async messagesFor(source: StoredEvent, reader: EntityManager): Promise<OutboxMessage[]> {
    const drafts = await this.options.translator.translate(source, reader);
    return drafts.map((draft) => {
      const publisher = INTEGRATION_EVENT_TYPES[draft.type].source;
      // Its subject would lie outside this service's stream: a translator bug, never to be published.
      if (publisher !== this.options.service) {
        throw new Error(`${this.options.service} cannot publish ${draft.type} (published by ${publisher})`);
      }
      const event = integrationEvent(source, draft);
      return { subject: this.options.subjects.integrationEvent(draft.type), msgId: event.id, payload: JSON.stringify(event) };
    });
  }
}

/** The whole integration event: the draft, with what comes from the event it stands for. */
export function integrationEvent(source: StoredEvent, draft: IntegrationEventDraft): IntegrationEvent {
  return {
    id: integrationEventId(source.eventId, draft.type),
    type: draft.type,
    version: INTEGRATION_EVENT_TYPES[draft.type].version,
    created_at: timeOf(source),
    workspace_id: draft.workspace_id,
    sequence: source.streamVersion,
    correlation_id: source.metadata.correlation_id,
    data: draft.data,
  } as IntegrationEvent;
}

/** The source event's own time (`data.at`, which most events carry), else when it was stored. */
function timeOf(source: StoredEvent): string {
  const at = source.data['at'];
  return typeof at === 'string' && !Number.isNaN(Date.parse(at)) ? at : source.createdAt.toISOString();
}
