import { INTEGRATION_EVENT_DURABLES } from '@interns/contracts';
import { IntegrationEventConsumers, integrationEventStream, type ServiceDeps } from '@interns/service-runtime';
import { FactsApplier } from '../facts/facts-applier';
import { factsConsumer } from './event-stream-consumer';

/** The durable consumer's name on each source stream: one per consuming service, shared by its replicas; NATS lets only analytics use it. */
export const ANALYTICS_DURABLE = INTEGRATION_EVENT_DURABLES.analytics;

/** The analytics service's consumers of the lifecycle and runs integration event streams. */
export class IntegrationEventsConsumers extends IntegrationEventConsumers {
  constructor(deps: ServiceDeps) {
    const applier = new FactsApplier(deps.dataSource);
    super((source) => factsConsumer({ ...integrationEventStream(deps, source, ANALYTICS_DURABLE), applier }));
  }
}
