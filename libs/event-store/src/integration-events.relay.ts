import type { DataSource } from 'typeorm';
import type { NatsConnection } from '@nats-io/transport-node';
import { eventTypeToken } from '@interns/contracts';
import type { ServiceName, Subjects } from '@interns/contracts';
import { OutboxRelay, RelayLogger } from './outbox-relay';

/**
 * Row name in `<schema>.checkpoints`. Every service uses it in its own schema: checkpoints are per schema and
 * the relay's leader lock is keyed by `<schema>/<checkpoint>`, so relays of different services never meet.
 */
export const INTEGRATION_EVENTS_CHECKPOINT = 'integration-events';

export interface IntegrationEventsRelayOptions {
  service: ServiceName;
  /** The service's event store schema. */
  schema: string;
  dataSource: DataSource;
  nats: NatsConnection;
  subjects: Subjects;
  logger?: RelayLogger;
}

/**
 * Publishes a service's committed events to JetStream stream `<prefix>_<service>_events` on
 * `<prefix>.evt.<service>.<event-type>` (`InternCreated` -> `intern-created`), `Nats-Msg-Id` = event id.
 * Never from a handler: the relay tails the events table after commit, so nothing is published that did not
 * commit and nothing committed is lost; one replica publishes at a time. Nest calls the lifecycle hooks of a
 * provider built from this class.
 */
export class IntegrationEventsRelay {
  private readonly relay: OutboxRelay;

  constructor(options: IntegrationEventsRelayOptions) {
    const { service, subjects } = options;
    this.relay = new OutboxRelay({
      dataSource: options.dataSource,
      schema: options.schema,
      nats: options.nats,
      streamName: subjects.eventStreamName(service),
      streamSubjects: [subjects.eventsOf(service)],
      subjectFor: (event) => subjects.event(service, eventTypeToken(event.type)),
      checkpointName: INTEGRATION_EVENTS_CHECKPOINT,
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
}
