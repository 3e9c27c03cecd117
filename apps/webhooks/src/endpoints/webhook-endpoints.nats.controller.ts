import { Controller, Inject, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  CreatedWebhookEndpoint,
  CreateWebhookRequest,
  ListWebhooksRequest,
  Subjects,
  WebhookDeliveryList,
  WebhookEndpointList,
  WebhookEndpointRequest,
} from '@interns/contracts';
import { WebhookEndpointsService } from './webhook-endpoints.service';

/** The webhook routes from the gateway, served by any replica (queue group `webhooks`). */
export function webhookEndpointsNatsController(subjects: Subjects['webhooks']): Type<unknown> {
  @Controller()
  class WebhookEndpointsNatsController {
    constructor(@Inject(WebhookEndpointsService) private readonly endpoints: WebhookEndpointsService) {}

    @MessagePattern(subjects.createEndpoint)
    create(@Payload() request: CreateWebhookRequest): Promise<CreatedWebhookEndpoint> {
      return this.endpoints.create(request);
    }

    @MessagePattern(subjects.listEndpoints)
    list(@Payload() request: ListWebhooksRequest): Promise<WebhookEndpointList> {
      return this.endpoints.list(request);
    }

    @MessagePattern(subjects.deleteEndpoint)
    delete(@Payload() request: WebhookEndpointRequest): Promise<{ deleted: true }> {
      return this.endpoints.delete(request);
    }

    @MessagePattern(subjects.listDeliveries)
    deliveries(@Payload() request: WebhookEndpointRequest): Promise<WebhookDeliveryList> {
      return this.endpoints.deliveries(request);
    }
  }
  return WebhookEndpointsNatsController;
}
