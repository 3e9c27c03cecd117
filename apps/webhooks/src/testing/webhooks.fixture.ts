/** Helpers for the webhooks service's integration tests: endpoint and delivery rows written straight into the schema. */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { EndpointSecrets } from '../secrets/endpoint-secrets';
import { newEndpointSecret } from '../deliveries/webhook-signature';

export const WORKSPACE = '11111111-1111-4111-8111-111111111111';

export async function insertEndpoint(
  dataSource: DataSource,
  options: { url: string; events?: string[]; workspaceId?: string; secrets?: EndpointSecrets },
): Promise<{ id: string; secret: string }> {
  const id = randomUUID();
  const secret = newEndpointSecret();
  await dataSource.query('INSERT INTO webhooks.endpoints (id, workspace_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [
    id,
    options.workspaceId ?? WORKSPACE,
    options.url,
    options.events ?? ['run.completed'],
    (options.secrets ?? (await testEndpointSecrets())).seal(secret, id),
  ]);
  return { id, secret };
}

export async function insertDelivery(dataSource: DataSource, endpointId: string, eventId = randomUUID()): Promise<{ eventId: string; payload: string }> {
  const payload = JSON.stringify({ id: eventId, type: 'run.completed', created_at: new Date().toISOString(), workspace_id: WORKSPACE, data: { n: 1 } });
  await dataSource.query('INSERT INTO webhooks.deliveries (endpoint_id, event_id, event_type, payload) VALUES ($1, $2, $3, $4)', [
    endpointId,
    eventId,
    'run.completed',
    payload,
  ]);
  return { eventId, payload };
}

export interface DeliveryRow {
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
}

export async function deliveryRow(dataSource: DataSource, endpointId: string, eventId: string): Promise<DeliveryRow | undefined> {
  const rows: DeliveryRow[] = await dataSource.query(
    'SELECT status, attempts, last_status_code, last_error, delivered_at FROM webhooks.deliveries WHERE endpoint_id = $1 AND event_id = $2',
    [endpointId, eventId],
  );
  return rows[0];
}

export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(25);
  }
}

/** Seals under a key of its own, as the service does under WEBHOOK_SECRETS_KEY. */
export function testEndpointSecrets(): Promise<EndpointSecrets> {
  return EndpointSecrets.load({ key: randomBytes(32).toString('base64'), previousKey: null, keysDir: '/nonexistent' });
}
