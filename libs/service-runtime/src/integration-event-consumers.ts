import { Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { INTEGRATION_EVENT_SOURCES, type IntegrationEventSource } from '@interns/contracts';
import type { DurableStreamSource } from '@interns/messaging';
import type { ServiceDeps } from './service-bootstrap';

/** Where a consuming service reads one source's integration events: its stream, subjects and the service's durable. */
export function integrationEventStream(
  deps: ServiceDeps,
  source: IntegrationEventSource,
  durableName: string,
): DurableStreamSource & { source: IntegrationEventSource } {
  return {
    nats: deps.nc,
    source,
    streamName: deps.subjects.eventStreamName(source),
    streamSubjects: [deps.subjects.eventsOf(source)],
    durableName,
    logger: new Logger(`IntegrationEvents:${source}`),
  };
}

/**
 * A consuming service's consumers, one per integration event source (analytics' facts, webhooks' deliveries):
 * started once the app is up, stopped (each finishing the message in hand) when it shuts down.
 */
export class IntegrationEventConsumers implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly consumers: { start(): void; stop(): Promise<void> }[];

  constructor(consumerOf: (source: IntegrationEventSource) => { start(): void; stop(): Promise<void> }) {
    this.consumers = INTEGRATION_EVENT_SOURCES.map(consumerOf);
  }

  onApplicationBootstrap(): void {
    for (const consumer of this.consumers) consumer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.consumers.map((consumer) => consumer.stop()));
  }
}
