import type { DataSource, EntityManager } from 'typeorm';
import type { StoredEvent } from './event.types';
import { EVENT_COLUMNS, type EventRow, type EventStoreTables, eventStoreTables, toStoredEvent } from './event-store.sql';

/** Where a tail has read up to: the last processed event's transaction id and global position. */
export interface TailCheckpoint {
  transactionId: string;
  position: string;
}

export function checkpointOf(event: Pick<StoredEvent, 'transactionId' | 'globalPosition'>): TailCheckpoint {
  return { transactionId: event.transactionId, position: event.globalPosition };
}

const ORIGIN: TailCheckpoint = { transactionId: '0', position: '0' };

/** A read of the tail: the events safe to process, and whether committed ones after them are held back. */
export interface TailBatch {
  events: StoredEvent[];
  heldBack: boolean;
}

/**
 * Reads committed events in an order no later commit can insert into.
 *
 * `global_position` comes from a sequence, taken at insert time but visible only at commit, so a reader
 * that remembers "the highest position seen" skips whatever an older, slower transaction commits later.
 * Instead events are ordered by (transaction_id, global_position) and only transactions older than every
 * transaction still running (`pg_snapshot_xmin`) are read: nothing can ever appear behind the checkpoint.
 * The price: a long-running transaction anywhere in the cluster delays (never loses) tailing.
 *
 * Every method takes an optional manager, so a consumer can read and save its checkpoint on its own
 * connection or inside the transaction that updates its read model.
 */
export class EventTail {
  private readonly tables: EventStoreTables;

  constructor(
    private readonly dataSource: DataSource,
    schema: string,
  ) {
    this.tables = eventStoreTables(schema);
  }

  async readAfter(checkpoint: TailCheckpoint | null, limit: number, manager?: EntityManager): Promise<StoredEvent[]> {
    return (await this.readBatchAfter(checkpoint, limit, manager)).events;
  }

  /**
   * As `readAfter`, and whether committed events after those wait on an older transaction still running (anywhere
   * in the cluster): a reader that was told of new work then knows it is held back, not done, and retries soon
   * rather than at its next poll.
   */
  async readBatchAfter(checkpoint: TailCheckpoint | null, limit: number, manager?: EntityManager): Promise<TailBatch> {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`limit must be a positive integer, got ${limit}`);
    const from = checkpoint ?? ORIGIN;
    // The safe rows (older than every transaction still running), and at most one held row after them, the first:
    // enough to say the tail is held back without reading what waits (one probe of the tail's index).
    const rows: (EventRow & { held: boolean })[] = await (manager ?? this.dataSource.manager).query(
      `WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
            first_held AS (
              SELECT h.transaction_id, h.global_position FROM horizon, ${this.tables.events} h
               WHERE (h.transaction_id, h.global_position) > ($1::xid8, $2::bigint) AND h.transaction_id >= horizon.xmin
               ORDER BY h.transaction_id, h.global_position LIMIT 1)
       SELECT ${EVENT_COLUMNS}, e.transaction_id >= horizon.xmin AS held
         FROM horizon, ${this.tables.events} e JOIN ${this.tables.streams} s ON s.stream_id = e.stream_id
        WHERE (e.transaction_id, e.global_position) > ($1::xid8, $2::bigint)
          AND (e.transaction_id < horizon.xmin
            OR (e.transaction_id, e.global_position) <= (SELECT transaction_id, global_position FROM first_held))
        ORDER BY e.transaction_id, e.global_position
        LIMIT $3`,
      [from.transactionId, from.position, limit],
    );
    const events: StoredEvent[] = [];
    for (const row of rows) {
      if (row.held) return { events, heldBack: true };
      events.push(toStoredEvent(row));
    }
    return { events, heldBack: false };
  }

  /**
   * Every event the reader's snapshot sees after `checkpoint`, in the tail's order, without waiting for older
   * transactions elsewhere in the cluster. Only for a reader inside one transaction that reads it all (a
   * rebuild): its snapshot never changes, so nothing can appear behind what it read while it reads.
   */
  async readSnapshotAfter(checkpoint: TailCheckpoint | null, limit: number, manager: EntityManager): Promise<StoredEvent[]> {
    const from = checkpoint ?? ORIGIN;
    const rows: EventRow[] = await manager.query(
      `SELECT ${EVENT_COLUMNS}
         FROM ${this.tables.events} e JOIN ${this.tables.streams} s ON s.stream_id = e.stream_id
        WHERE (e.transaction_id, e.global_position) > ($1::xid8, $2::bigint)
        ORDER BY e.transaction_id, e.global_position
        LIMIT $3`,
      [from.transactionId, from.position, limit],
    );
    return rows.map(toStoredEvent);
  }

  async loadCheckpoint(name: string, manager?: EntityManager): Promise<TailCheckpoint | null> {
    const rows: { transaction_id: string; position: string }[] = await (manager ?? this.dataSource.manager).query(
      `SELECT transaction_id::text AS transaction_id, position::text AS position
         FROM ${this.tables.checkpoints} WHERE name = $1`,
      [name],
    );
    return rows.length === 0 ? null : { transactionId: rows[0].transaction_id, position: rows[0].position };
  }

  /** Only moves forward: a late or duplicate save never rewinds a checkpoint (delete the row to replay). */
  async saveCheckpoint(
    name: string,
    event: Pick<StoredEvent, 'transactionId' | 'globalPosition'>,
    manager?: EntityManager,
  ): Promise<void> {
    await (manager ?? this.dataSource.manager).query(
      `INSERT INTO ${this.tables.checkpoints} AS c (name, position, transaction_id, updated_at)
       VALUES ($1, $2::bigint, $3::xid8, now())
       ON CONFLICT (name) DO UPDATE
          SET position = EXCLUDED.position, transaction_id = EXCLUDED.transaction_id, updated_at = now()
        WHERE (c.transaction_id, c.position) < (EXCLUDED.transaction_id, EXCLUDED.position)`,
      [name, event.globalPosition, event.transactionId],
    );
  }

  /**
   * Seconds (by the database clock) since the first committed event after the checkpoint, in tail order, was
   * written: how far behind a reader is; 0 when it is caught up. One index probe, however long the backlog.
   */
  async backlogAgeSeconds(checkpoint: TailCheckpoint | null, manager?: EntityManager): Promise<number> {
    const from = checkpoint ?? ORIGIN;
    const rows: { seconds: number }[] = await (manager ?? this.dataSource.manager).query(
      `SELECT GREATEST(EXTRACT(EPOCH FROM clock_timestamp() - created_at), 0)::float8 AS seconds
         FROM ${this.tables.events}
        WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)
        ORDER BY transaction_id, global_position
        LIMIT 1`,
      [from.transactionId, from.position],
    );
    return rows.length === 0 ? 0 : rows[0].seconds;
  }

  /** Committed events after the checkpoint, including those still held back behind a running transaction. */
  async countAfter(checkpoint: TailCheckpoint | null, manager?: EntityManager): Promise<number> {
    const from = checkpoint ?? ORIGIN;
    const rows: { n: number }[] = await (manager ?? this.dataSource.manager).query(
      `SELECT count(*)::int AS n FROM ${this.tables.events}
        WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)`,
      [from.transactionId, from.position],
    );
    return rows[0].n;
  }
}
