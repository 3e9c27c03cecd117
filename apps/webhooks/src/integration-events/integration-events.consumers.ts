import { Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { INTEGRATION_EVENT_DURABLES } from '@interns/contracts';
import type { ServiceDeps } from '@interns/service-runtime';
import { EventRecorder } from './event-recorder';
import { EventStreamConsumer } from './event-stream-consumer';
import { EVENT_SOURCES } from './received-event';

/** The durable consumer's name on each source stream, shared by the webhooks replicas; NATS lets only webhooks use it. */
export const WEBHOOKS_DURABLE = INTEGRATION_EVENT_DURABLES.webhooks;

/** The webhooks service's consumers of the lifecycle and runs integration event streams. */
export class IntegrationEventsConsumers implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly consumers: EventStreamConsumer[];

  constructor(deps: ServiceDeps, onRecorded: () => void) {
    const recorder = new EventRecorder(deps.dataSource);
    this.consumers = EVENT_SOURCES.map(
      (source) =>
        new EventStreamConsumer({
          nats: deps.nc,
          source,
          streamName: deps.subjects.eventStreamName(source),
          streamSubjects: [deps.subjects.eventsOf(source)],
          durableName: WEBHOOKS_DURABLE,
          recorder,
          onRecorded,
          logger: new Logger(`IntegrationEvents:${source}`),
        }),
    );
  }

  onApplicationBootstrap(): void {
    for (const consumer of this.consumers) consumer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.consumers.map((consumer) => consumer.stop()));
  }
}
