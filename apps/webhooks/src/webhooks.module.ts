import { DynamicModule, Logger, Module } from '@nestjs/common';
import { pingNatsController } from '@interns/service-runtime';
import type { ServiceDeps } from '@interns/service-runtime';
import { WorkSignal } from '@interns/workers';
import { AddressGuard, type HostResolver, systemResolver } from './address-guard/address-guard';
import { DeliverySender } from './deliveries/delivery-sender';
import { DeliveryStore } from './deliveries/delivery-store';
import { DeliveryWorker } from './deliveries/delivery-worker';
import { EndpointSecrets } from './secrets/endpoint-secrets';
import { EndpointStore } from './endpoints/endpoint-store';
import { webhookEndpointsNatsController } from './endpoints/webhook-endpoints.nats.controller';
import { WebhookEndpointsService } from './endpoints/webhook-endpoints.service';
import { IntegrationEventsConsumers } from './integration-events/integration-events.consumers';
import { QuestionPayloadPurger } from './retention/question-payload-purger';
import { QuestionRetentionSweeper } from './retention/question-retention.sweeper';

/** Time a claim holds a delivery beyond the attempt's own timeout: enough to record its result. */
const CLAIM_MARGIN_MS = 5_000;

/**
 * The webhooks service (CONTRACT section 13): the endpoint routes over NATS, the consumers that turn integration
 * events into deliveries, the worker that delivers them, and the sweep that purges the questions they quote
 * (CONTRACT section 22). `forRoot` is its composition root
 * (docs/architecture.md, "Dependency injection"); Nest starts and stops the workers with the app.
 */
@Module({})
export class WebhooksModule {
  static forRoot(deps: ServiceDeps, resolver: HostResolver = systemResolver): DynamicModule {
    const { config } = deps;
    if (config.webhookAllowInsecure && config.nodeEnv === 'production') {
      throw new Error('WEBHOOK_ALLOW_INSECURE=true is for development and tests; it is refused with NODE_ENV=production');
    }
    const guard = new AddressGuard(resolver, config.webhookAllowInsecure);
    const recorded = new WorkSignal();
    const store = new EndpointStore(deps.dataSource);
    const logger = new Logger('WebhookDeliveries');
    const questions = new QuestionPayloadPurger(deps.dataSource);
    // Loaded (or, in development, generated) and every stored secret sealed under it before the service serves:
    // a configured key that does not load stops it at start, not at the first delivery.
    const secrets = (async () => {
      const loaded = await EndpointSecrets.load({
        key: config.webhookSecretsKey,
        previousKey: config.webhookSecretsKeyPrevious,
        keysDir: config.keysDir,
      });
      if (config.webhookSecretsKey === null && config.nodeEnv === 'production') {
        logger.warn(
          'WEBHOOK_SECRETS_KEY is not set: endpoint secrets are sealed with a key generated under KEYS_DIR, which every webhooks replica must share and keep',
        );
      }
      const { resealed, unreadable } = await store.resealSecrets(loaded);
      if (resealed > 0) logger.log(`sealed ${resealed} webhook secret(s) under the current key`);
      if (unreadable.length > 0) {
        logger.error(
          `${unreadable.length} webhook endpoint secret(s) are sealed under a key this service does not hold (WEBHOOK_SECRETS_KEY, WEBHOOK_SECRETS_KEY_PREVIOUS): their deliveries fail until it is configured (${unreadable.slice(0, 5).join(', ')})`,
        );
      }
      return loaded;
    })();
    return {
      module: WebhooksModule,
      controllers: [pingNatsController('webhooks', deps.subjects.webhooks.ping), webhookEndpointsNatsController(deps.subjects.webhooks)],
      providers: [
        { provide: EndpointSecrets, useFactory: () => secrets },
        {
          provide: WebhookEndpointsService,
          inject: [EndpointSecrets],
          useFactory: (loaded: EndpointSecrets) => new WebhookEndpointsService(store, guard, config.webhookEndpointsPerWorkspace, loaded),
        },
        { provide: IntegrationEventsConsumers, useValue: new IntegrationEventsConsumers(deps, questions, () => recorded.notify()) },
        { provide: QuestionRetentionSweeper, useValue: new QuestionRetentionSweeper(questions, config.transcriptRetentionMs) },
        {
          provide: DeliveryWorker,
          inject: [EndpointSecrets],
          useFactory: (loaded: EndpointSecrets) =>
            new DeliveryWorker({
              store: new DeliveryStore(deps.dataSource, config.webhookRetryScheduleMs, 2 * config.webhookTimeoutMs + CLAIM_MARGIN_MS, loaded),
              sender: new DeliverySender(guard, config.webhookTimeoutMs),
              concurrency: config.webhookDeliveryConcurrency,
              signal: recorded,
              logger,
            }),
        },
      ],
    };
  }
}
