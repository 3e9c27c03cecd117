import { INTEGRATION_EVENT_DURABLES } from '@interns/contracts';
import { IntegrationEventConsumers, integrationEventStream, type ServiceDeps } from '@interns/service-runtime';
import type { QuestionPayloadPurger } from '../retention/question-payload-purger';
import { EventRecorder } from './event-recorder';
import { deliveriesConsumer } from './event-stream-consumer';

/** The durable consumer's name on each source stream, shared by the webhooks replicas; NATS lets only webhooks use it. */
export const WEBHOOKS_DURABLE = INTEGRATION_EVENT_DURABLES.webhooks;

/** The webhooks service's consumers of the lifecycle and runs integration event streams. */
export class IntegrationEventsConsumers extends IntegrationEventConsumers {
  constructor(deps: ServiceDeps, questions: QuestionPayloadPurger, onRecorded: () => void) {
    const recorder = new EventRecorder(deps.dataSource, questions);
    super((source) => deliveriesConsumer({ ...integrationEventStream(deps, source, WEBHOOKS_DURABLE), recorder, onRecorded }));
  }
}
