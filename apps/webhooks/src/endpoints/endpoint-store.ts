import type { DataSource } from 'typeorm';
import type { EndpointSecrets } from '../secrets/endpoint-secrets';
import {
  WEBHOOK_DELIVERIES_LOG_LIMIT,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEventType,
} from '@interns/contracts';

interface EndpointRow {
  id: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  created_at: Date;
}

interface DeliveryRow {
  event_id: string;
  event_type: WebhookEventType;
  status: WebhookDelivery['status'];
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  delivered_at: Date | null;
}

export interface NewEndpoint {
  id: string;
  workspaceId: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  /** EndpointSecrets.seal of the secret: the table never holds one in the clear. */
  sealedSecret: string;
}

/** The workspace already has as many endpoints as it may. */
export class EndpointLimitError extends Error {
  constructor(readonly limit: number) {
    super(`a workspace may have at most ${limit} webhook endpoints`);
    this.name = 'EndpointLimitError';
  }
}

const ENDPOINT_COLUMNS = 'id, url, events, description, created_at';

/** `webhooks.endpoints` and the deliveries log, always within one workspace. */
export class EndpointStore {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Inserts the endpoint unless its workspace is at `limit`. The count and the insert run under a transaction
   * lock on the workspace, so concurrent creates cannot overshoot it.
   */
  async create(endpoint: NewEndpoint, limit: number): Promise<WebhookEndpoint> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query("SELECT pg_advisory_xact_lock(hashtextextended('webhooks.endpoints:' || $1, 0))", [endpoint.workspaceId]);
      const [{ count }]: { count: number }[] = await manager.query(
        'SELECT count(*)::int AS count FROM webhooks.endpoints WHERE workspace_id = $1',
        [endpoint.workspaceId],
      );
      if (count >= limit) throw new EndpointLimitError(limit);
      const [row]: EndpointRow[] = await manager.query(
        `INSERT INTO webhooks.endpoints (id, workspace_id, url, events, description, secret)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${ENDPOINT_COLUMNS}`,
        [endpoint.id, endpoint.workspaceId, endpoint.url, endpoint.events, endpoint.description, endpoint.sealedSecret],
      );
      return endpointOf(row);
    });
  }

  /**
   * Seals again every secret not sealed under the current key: one stored in the clear by an older release, or
   * under WEBHOOK_SECRETS_KEY_PREVIOUS (a rotation). Run at start, before deliveries; returns how many it sealed.
   */
  async resealSecrets(secrets: EndpointSecrets): Promise<{ resealed: number; unreadable: string[] }> {
    const rows: { id: string; secret: string }[] = await this.dataSource.query('SELECT id, secret FROM webhooks.endpoints');
    let resealed = 0;
    const unreadable: string[] = [];
    for (const row of rows) {
      if (secrets.isCurrent(row.secret)) continue;
      let secret: string;
      try {
        secret = secrets.open(row.secret, row.id);
      } catch {
        // Sealed under a key this process does not hold: left as it is (another replica may hold it).
        unreadable.push(row.id);
        continue;
      }
      // Guarded by the value read: a row changed meanwhile (another replica resealed it) is left as it is.
      await this.dataSource.query('UPDATE webhooks.endpoints SET secret = $3 WHERE id = $1 AND secret = $2', [
        row.id,
        row.secret,
        secrets.seal(secret, row.id),
      ]);
      resealed += 1;
    }
    return { resealed, unreadable };
  }

  /** The workspace's endpoints, newest first. */
  async list(workspaceId: string): Promise<WebhookEndpoint[]> {
    const rows: EndpointRow[] = await this.dataSource.query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhooks.endpoints WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC`,
      [workspaceId],
    );
    return rows.map(endpointOf);
  }

  /** Deletes the endpoint and, with it, its deliveries (pending ones are never attempted again); false when not found. */
  async delete(workspaceId: string, endpointId: string): Promise<boolean> {
    const [, affected]: [unknown, number] = await this.dataSource.query(
      'DELETE FROM webhooks.endpoints WHERE id = $1 AND workspace_id = $2',
      [endpointId, workspaceId],
    );
    return affected > 0;
  }

  /** The endpoint's newest deliveries (at most WEBHOOK_DELIVERIES_LOG_LIMIT), or null when the endpoint is not the workspace's. */
  async deliveries(workspaceId: string, endpointId: string): Promise<WebhookDelivery[] | null> {
    const owned: unknown[] = await this.dataSource.query('SELECT 1 FROM webhooks.endpoints WHERE id = $1 AND workspace_id = $2', [
      endpointId,
      workspaceId,
    ]);
    if (owned.length === 0) return null;
    const rows: DeliveryRow[] = await this.dataSource.query(
      `SELECT event_id, event_type, status, attempts, last_status_code, last_error, created_at, delivered_at
         FROM webhooks.deliveries WHERE endpoint_id = $1 ORDER BY created_at DESC, event_id DESC LIMIT $2`,
      [endpointId, WEBHOOK_DELIVERIES_LOG_LIMIT],
    );
    return rows.map((row) => ({
      id: row.event_id,
      event_type: row.event_type,
      status: row.status,
      attempts: row.attempts,
      last_status_code: row.last_status_code,
      last_error: row.last_error,
      created_at: row.created_at.toISOString(),
      delivered_at: row.delivered_at?.toISOString() ?? null,
    }));
  }
}

function endpointOf(row: EndpointRow): WebhookEndpoint {
  return { id: row.id, url: row.url, events: row.events, description: row.description, created_at: row.created_at.toISOString() };
}
