import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError, isUuid, parseCreateWebhookBody } from '@interns/contracts';
import type {
  CreatedWebhookEndpoint,
  CreateWebhookRequest,
  ListWebhooksRequest,
  WebhookDeliveryList,
  WebhookEndpointList,
  WebhookEndpointRequest,
} from '@interns/contracts';
import { assertNoCommandBody, jsonBodyOf } from '../http/body-rules';
import { ServiceClient } from '../service.client';
import { WEBHOOK_ID_PARAM } from './webhook-routes';

const ONE_WEBHOOK = `:${WEBHOOK_ID_PARAM}`;

/**
 * HTTP adapter of a workspace's webhook endpoints (CONTRACT section 13). The admission hook checked the
 * credential (user and organization keys, OAuth with `interns`); the body's shape is checked here; the webhooks
 * service judges the URL (https, public addresses after DNS resolution) and scopes everything to the caller's
 * workspace (another workspace's endpoint: 404).
 */
@Controller('webhooks')
export class WebhooksHttpController {
  constructor(@Inject(ServiceClient) private readonly services: ServiceClient) {}

  @Post()
  @HttpCode(201)
  create(@Req() request: FastifyRequest): Promise<CreatedWebhookEndpoint> {
    const body = parseCreateWebhookBody(jsonBodyOf(request));
    const payload: CreateWebhookRequest = { context: this.services.contextOf(request), body };
    return this.services.request<CreatedWebhookEndpoint>(this.services.subjects.webhooks.createEndpoint, request, payload);
  }

  @Get()
  list(@Req() request: FastifyRequest): Promise<WebhookEndpointList> {
    const payload: ListWebhooksRequest = { context: this.services.contextOf(request) };
    return this.services.request<WebhookEndpointList>(this.services.subjects.webhooks.listEndpoints, request, payload);
  }

  @Delete(ONE_WEBHOOK)
  @HttpCode(202)
  delete(@Req() request: FastifyRequest, @Param(WEBHOOK_ID_PARAM) webhookId: string): Promise<{ deleted: true }> {
    assertNoCommandBody(request);
    const payload = this.endpointRequest(request, webhookId);
    return this.services.request<{ deleted: true }>(this.services.subjects.webhooks.deleteEndpoint, request, payload);
  }

  @Get(`${ONE_WEBHOOK}/deliveries`)
  deliveries(@Req() request: FastifyRequest, @Param(WEBHOOK_ID_PARAM) webhookId: string): Promise<WebhookDeliveryList> {
    const payload = this.endpointRequest(request, webhookId);
    return this.services.request<WebhookDeliveryList>(this.services.subjects.webhooks.listDeliveries, request, payload);
  }

  private endpointRequest(request: FastifyRequest, webhookId: string): WebhookEndpointRequest {
    // Like a non-uuid intern id: names no endpoint.
    if (!isUuid(webhookId)) throw new DomainError('not_found', 'webhook endpoint not found');
    return { context: this.services.contextOf(request), endpointId: webhookId.toLowerCase() };
  }
}
