import type { DataSource } from 'typeorm';
import type { EndpointSecrets } from '../secrets/endpoint-secrets';
import type { AttemptResult, DeliveryAttempt } from './delivery-sender';

/** A delivery taken by this replica for one attempt: `attempt` is its number (1 for the first). */
export interface ClaimedDelivery extends Omit<DeliveryAttempt, 'secret'> {
  endpointId: string;
  attempt: number;
  /** The endpoint's signing secret, opened; null when this replica cannot open it (`secretError` says why). */
  secret: string | null;
  secretError: string | null;
}

/** What recording an attempt's result made of the delivery. */
export type DeliveryFate = 'delivered' | 'retry' | 'failed' | 'gone';

/**
 * The deliveries table as a work queue shared by every replica.
 *
 * A claim (one statement, `FOR UPDATE SKIP LOCKED`, so replicas never take the same row) counts the attempt
 * and moves `next_attempt_at` past the attempt's longest possible duration: a replica that dies mid-attempt
 * leaves a row that becomes due again when that claim lapses, and another replica retries it (that one
 * delivery may arrive twice: at least once). Results are recorded only by the claim's holder (`attempts` still
 * equals its attempt number), so a late answer of a lapsed claim cannot overwrite a newer attempt.
 */
export class DeliveryStore {
  constructor(
    private readonly dataSource: DataSource,
    /** Waits after each failed attempt; attempts beyond its length + 1 are not made (the delivery fails). */
    private readonly retryScheduleMs: readonly number[],
    /** How long a claim holds a row: longer than an attempt can take, plus the time to record its result. */
    private readonly claimMs: number,
    /** Opens the endpoints' sealed secrets, for signing. */
    private readonly secrets: EndpointSecrets,
  ) {}

  async claimDue(limit: number): Promise<ClaimedDelivery[]> {
    if (limit < 1) return [];
    // An UPDATE answers [rows, count] through TypeORM.
    const [rows]: [{ endpoint_id: string; event_id: string; attempts: number; payload: string; url: string; secret: string }[], number] =
      await this.dataSource.query(
        `UPDATE webhooks.deliveries d
            SET attempts = d.attempts + 1, next_attempt_at = clock_timestamp() + make_interval(secs => $2::double precision / 1000)
           FROM (SELECT endpoint_id, event_id FROM webhooks.deliveries
                  WHERE status = 'pending' AND next_attempt_at <= clock_timestamp()
                  ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED) due,
                webhooks.endpoints e
          WHERE d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id AND e.id = d.endpoint_id
      RETURNING d.endpoint_id, d.event_id, d.attempts, d.payload, e.url, e.secret`,
        [limit, this.claimMs],
      );
    return rows.map((row) => {
      const delivery = { endpointId: row.endpoint_id, eventId: row.event_id, attempt: row.attempts, payload: row.payload, url: row.url };
      // One endpoint's unreadable secret (a key this replica lacks) fails that attempt alone, not the batch.
      try {
        return { ...delivery, secret: this.secrets.open(row.secret, row.endpoint_id), secretError: null };
      } catch (error) {
        return { ...delivery, secret: null, secretError: (error as Error).message };
      }
    });
  }

  /** Records an attempt's result: delivered, due again after the schedule's wait, or failed after the last retry. */
  async record(delivery: ClaimedDelivery, result: AttemptResult): Promise<DeliveryFate> {
    const statusCode = result.statusCode;
    if (result.outcome === 'delivered') {
      const done = await this.update(
        `status = 'delivered', delivered_at = clock_timestamp(), last_status_code = $4, last_error = NULL`,
        delivery,
        [statusCode],
      );
      return done ? 'delivered' : 'gone';
    }
    const waitMs = this.retryScheduleMs[delivery.attempt - 1];
    if (waitMs === undefined) {
      const done = await this.update(`status = 'failed', last_status_code = $4, last_error = $5`, delivery, [statusCode, result.error]);
      return done ? 'failed' : 'gone';
    }
    const done = await this.update(
      `next_attempt_at = clock_timestamp() + make_interval(secs => $6::double precision / 1000), last_status_code = $4, last_error = $5`,
      delivery,
      [statusCode, result.error, waitMs],
    );
    return done ? 'retry' : 'gone';
  }

  /**
   * How long until the next pending delivery is due (0 if one is overdue; null: none pending), measured on the
   * database's clock, which set the due times, so the worker can wake for it.
   */
  async msUntilNextDue(): Promise<number | null> {
    const [row]: { ms: number | null }[] = await this.dataSource.query(
      `SELECT extract(epoch FROM min(next_attempt_at) - clock_timestamp())::double precision * 1000 AS ms
         FROM webhooks.deliveries WHERE status = 'pending'`,
    );
    return row?.ms === null || row?.ms === undefined ? null : Math.max(0, Math.ceil(row.ms));
  }

  /** Age of the oldest delivery still pending (0 when none): how far behind the deliveries are. */
  async oldestPendingAgeSeconds(): Promise<number> {
    const [row]: { age: number | null }[] = await this.dataSource.query(
      "SELECT extract(epoch FROM clock_timestamp() - min(created_at))::double precision AS age FROM webhooks.deliveries WHERE status = 'pending'",
    );
    return Math.max(0, row?.age ?? 0);
  }

  /** Updates the delivery if this replica's claim still holds it; false when it was deleted or claimed again. */
  private async update(set: string, delivery: ClaimedDelivery, values: unknown[]): Promise<boolean> {
    const [, affected]: [unknown, number] = await this.dataSource.query(
      `UPDATE webhooks.deliveries SET ${set}
        WHERE endpoint_id = $1 AND event_id = $2 AND status = 'pending' AND attempts = $3`,
      [delivery.endpointId, delivery.eventId, delivery.attempt, ...values],
    );
    return affected > 0;
  }
}
