import { Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { INTEGRATION_EVENT_DURABLES } from '@interns/contracts';
import type { ServiceDeps } from '@interns/service-runtime';
import { FactsApplier } from '../facts/facts-applier';
import { EventStreamConsumer } from './event-stream-consumer';
import { EVENT_SOURCES } from './integration-event';

/** The durable consumer's name on each source stream: one per consuming service, shared by its replicas; NATS lets only analytics use it. */
export const ANALYTICS_DURABLE = INTEGRATION_EVENT_DURABLES.analytics;

/** The analytics service's consumers of the lifecycle and runs integration event streams. */
export class IntegrationEventsConsumers implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly consumers: EventStreamConsumer[];

  constructor(deps: ServiceDeps) {
    const applier = new FactsApplier(deps.dataSource);
    this.consumers = EVENT_SOURCES.map(
      (source) =>
        new EventStreamConsumer({
          nats: deps.nc,
          source,
          streamName: deps.subjects.eventStreamName(source),
          streamSubjects: [deps.subjects.eventsOf(source)],
          durableName: ANALYTICS_DURABLE,
          applier,
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
