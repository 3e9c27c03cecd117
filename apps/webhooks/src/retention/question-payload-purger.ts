// retention/: transcript retention on the webhooks side (CONTRACT section 22): the question wording of deliveries,
// purged with the intern and swept past TRANSCRIPT_RETENTION_MS.
import type { DataSource, EntityManager } from 'typeorm';
import { QUESTION_WORDING } from '@interns/contracts';

/** Deliveries purged per statement: a backlog goes in short statements, never one long lock. */
export const QUESTION_PURGE_BATCH = 500;

const KEY = /^[a-z]+$/;

/** The payload (text) with the question's wording blanked (QUESTION_WORDING under `data.arguments`); `d` is the delivery. */
const PURGED_PAYLOAD = QUESTION_WORDING.reduce((payload, { key, purged }) => {
  if (!KEY.test(key)) throw new Error(`unexpected question key ${key}`);
  // create_missing false: a permission question has no `message`, an elicitation no `operation`.
  return `jsonb_set(${payload}, '{data,arguments,${key}}', '${JSON.stringify(purged)}'::jsonb, false)`;
}, 'd.payload::jsonb');

/**
 * Purges what webhook deliveries quote of a transcript (CONTRACT section 22): a `question.opened` payload holds the
 * model's question, so its wording is blanked (the rest of the payload, the delivery's status and attempts stay;
 * a delivery still pending is sent with the blanked payload). The other webhook types carry no words of a run.
 * Idempotent: a purged delivery is marked and not selected again.
 */
export class QuestionPayloadPurger {
  constructor(private readonly dataSource: DataSource) {}

  /** Every question delivery about a deleted intern, in the transaction that records its `intern.deleted`. */
  async purgeIntern(manager: EntityManager, internId: string): Promise<number> {
    let purged = 0;
    for (;;) {
      // Waits for a delivery an attempt holds: none of the intern's questions may be left behind.
      const batch = await this.purgeWhere(manager, `(payload::jsonb) -> 'data' ->> 'intern_id' = $1`, [internId], 'FOR UPDATE');
      purged += batch;
      if (batch < QUESTION_PURGE_BATCH) return purged;
    }
  }

  /** At most a batch of question deliveries recorded longer than `retentionMs` ago (by the database's clock). */
  purgeRecordedBefore(retentionMs: number): Promise<number> {
    // One held by an attempt is left to the next round.
    return this.purgeWhere(this.dataSource.manager, `created_at < now() - $1::bigint * interval '1 millisecond'`, [retentionMs], 'FOR UPDATE SKIP LOCKED');
  }

  private async purgeWhere(
    manager: EntityManager,
    condition: string,
    values: unknown[],
    locking: 'FOR UPDATE' | 'FOR UPDATE SKIP LOCKED',
  ): Promise<number> {
    const [, count]: [unknown[], number] = await manager.query(
      `UPDATE webhooks.deliveries d SET payload = (${PURGED_PAYLOAD})::text, transcript_purged_at = now()
        WHERE d.ctid IN (SELECT ctid FROM webhooks.deliveries
                          WHERE event_type = 'question.opened' AND transcript_purged_at IS NULL AND ${condition}
                          LIMIT ${QUESTION_PURGE_BATCH} ${locking})`,
      values,
    );
    return count;
  }
}
