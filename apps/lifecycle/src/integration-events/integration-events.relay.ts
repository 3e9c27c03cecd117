import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { OutboxRelay } from '@interns/event-store';
import { SERVICE_DEPS } from '@interns/health';
import type { ServiceDeps } from '@interns/health';
import { LIFECYCLE_SCHEMA } from '../migrations';

export const RELAY_CHECKPOINT = 'integration-events';

/** `InternCreated` -> `intern-created`: subject tokens read as the rest of the subject space. */
export function eventSubjectToken(type: string): string {
  return type.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

/**
 * Publishes committed lifecycle events to JetStream (`<prefix>.evt.lifecycle.<event-type>`), never from a
 * handler directly: the relay tails the events table after commit, so nothing is published that did not
 * commit and nothing committed is lost.
 */
@Injectable()
export class IntegrationEventsRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly relay: OutboxRelay;

  constructor(@Inject(SERVICE_DEPS) deps: ServiceDeps) {
    this.relay = new OutboxRelay({
      dataSource: deps.dataSource,
      schema: LIFECYCLE_SCHEMA,
      nats: deps.nc,
      streamName: deps.subjects.eventStreamName('lifecycle'),
      streamSubjects: [deps.subjects.eventsOf('lifecycle')],
      subjectFor: (event) => deps.subjects.event('lifecycle', eventSubjectToken(event.type)),
      checkpointName: RELAY_CHECKPOINT,
      logger: new Logger('IntegrationEventsRelay'),
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.relay.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.relay.stop();
  }

  lag(): Promise<number> {
    return this.relay.lag();
  }
}
