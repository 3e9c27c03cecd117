import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { eventTypeToken } from '@interns/contracts';
import { OutboxRelay } from '@interns/event-store';
import { SERVICE_DEPS } from '@interns/health';
import type { ServiceDeps } from '@interns/health';

/** The runs service's event store schema (sessions and runs, stream type `session`). */
export const RUNS_EVENTS_SCHEMA = 'runs';

/**
 * Row in `runs.checkpoints`. Lifecycle's relay uses the same name in its own schema: checkpoints are per
 * schema, and the relay's leader lock is keyed by `<schema>/<checkpoint>`, so the two never meet.
 */
export const RELAY_CHECKPOINT = 'integration-events';

/**
 * Publishes committed session and run events (SessionOpened, RunStarted, UsageRecorded, RunFinished, ...)
 * to JetStream stream `<prefix>_runs_events` on `<prefix>.evt.runs.<event-type>`, `Nats-Msg-Id` = event
 * id. Tails the events table after commit (never from a handler), one publishing replica at a time.
 */
@Injectable()
export class RunsIntegrationEventsRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly relay: OutboxRelay;

  constructor(@Inject(SERVICE_DEPS) deps: ServiceDeps) {
    this.relay = new OutboxRelay({
      dataSource: deps.dataSource,
      schema: RUNS_EVENTS_SCHEMA,
      nats: deps.nc,
      streamName: deps.subjects.eventStreamName('runs'),
      streamSubjects: [deps.subjects.eventsOf('runs')],
      subjectFor: (event) => deps.subjects.event('runs', eventTypeToken(event.type)),
      checkpointName: RELAY_CHECKPOINT,
      logger: new Logger('RunsIntegrationEventsRelay'),
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
