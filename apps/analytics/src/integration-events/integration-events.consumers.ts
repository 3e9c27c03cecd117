import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { SERVICE_DEPS } from '@interns/health';
import type { ServiceDeps } from '@interns/health';
import { FactsApplier } from '../facts/facts-applier';
import { EventStreamConsumer } from './event-stream-consumer';
import { EVENT_SOURCES } from './integration-event';

/** The durable consumer's name on each source stream: one per consuming service, shared by its replicas. */
export const ANALYTICS_DURABLE = 'analytics';

/** The analytics service's consumers of the lifecycle and runs integration event streams. */
@Injectable()
export class IntegrationEventsConsumers implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly consumers: EventStreamConsumer[];

  constructor(@Inject(SERVICE_DEPS) deps: ServiceDeps) {
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
