import { randomUUID } from 'node:crypto';
import {
  type CreatedWebhookEndpoint,
  type CreateWebhookRequest,
  DomainError,
  isUuid,
  parseCreateWebhookBody,
  type ListWebhooksRequest,
  type WebhookDeliveryList,
  type WebhookEndpointList,
  type WebhookEndpointRequest,
} from '@interns/contracts';
import { type AddressGuard, UnsafeTargetError } from '../address-guard/address-guard';
import { newEndpointSecret } from '../deliveries/webhook-signature';
import type { EndpointSecrets } from '../secrets/endpoint-secrets';
import { EndpointLimitError, type EndpointStore } from './endpoint-store';

/**
 * The endpoint routes of CONTRACT section 13, behind the gateway (which checked the credential and the body's
 * shape). Everything is scoped to the caller's workspace: another workspace's endpoint is not found (404).
 */
export class WebhookEndpointsService {
  constructor(
    private readonly store: EndpointStore,
    private readonly guard: AddressGuard,
    private readonly endpointsPerWorkspace: number,
    private readonly secrets: EndpointSecrets,
  ) {}

  async create(request: CreateWebhookRequest): Promise<CreatedWebhookEndpoint> {
    const { context } = request;
    // The gateway parsed it already; parsing again keeps this service's table safe from any other caller's shapes.
    const body = parseCreateWebhookBody(request.body);
    try {
      // Resolved here, where deliveries connect from: the address classes are judged as this service sees them.
      await this.guard.check(body.url);
    } catch (error) {
      if (error instanceof UnsafeTargetError) throw new DomainError('invalid_body', error.message);
      throw error;
    }
    const secret = newEndpointSecret();
    const id = randomUUID();
    try {
      const endpoint = await this.store.create(
        {
          id,
          workspaceId: context.principal.workspaceId,
          url: body.url,
          events: body.events,
          description: body.description ?? null,
          // Answered once, below; stored sealed.
          sealedSecret: this.secrets.seal(secret, id),
        },
        this.endpointsPerWorkspace,
      );
      return { ...endpoint, secret };
    } catch (error) {
      if (error instanceof EndpointLimitError) throw new DomainError('invalid_body', error.message);
      throw error;
    }
  }

  async list({ context }: ListWebhooksRequest): Promise<WebhookEndpointList> {
    return { data: await this.store.list(context.principal.workspaceId) };
  }

  async delete({ context, endpointId }: WebhookEndpointRequest): Promise<{ deleted: true }> {
    if (!isUuid(endpointId) || !(await this.store.delete(context.principal.workspaceId, endpointId.toLowerCase()))) {
      throw new DomainError('not_found', 'webhook endpoint not found');
    }
    return { deleted: true };
  }

  async deliveries({ context, endpointId }: WebhookEndpointRequest): Promise<WebhookDeliveryList> {
    const data = isUuid(endpointId) ? await this.store.deliveries(context.principal.workspaceId, endpointId.toLowerCase()) : null;
    if (data === null) throw new DomainError('not_found', 'webhook endpoint not found');
    return { data };
  }
}
