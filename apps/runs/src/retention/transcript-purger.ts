import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import type { Subjects } from '@interns/contracts';
import { sessionStreamId, TRANSCRIPT_FIELDS, type TranscriptField } from '@interns/runs-domain';

/** Runs purged per transaction: a backlog is worked off in short transactions, never one long lock. */
export const TRANSCRIPT_PURGE_BATCH = 50;

interface RunToPurge {
  id: string;
  session_id: string;
}

const SQL_NAME = /^[A-Za-z]+$/;

/** `data` with every transcript field of its event type blanked (TRANSCRIPT_FIELDS); `e` is the events row. */
function purgedDataSql(): string {
  const cases = Object.entries(TRANSCRIPT_FIELDS)
    .filter(([, fields]) => fields.length > 0)
    .map(([type, fields]) => {
      // Built from constants, checked anyway since they are spelled into the statement.
      if (!SQL_NAME.test(type) || !fields.every((field) => field.path.every((key) => SQL_NAME.test(key)))) {
        throw new Error(`unexpected transcript field of ${type}`);
      }
      // create_missing false: a field the event does not have (a permission question's `message`, a null
      // `error`) stays absent.
      const blanked = fields.reduce(
        (data: string, field: TranscriptField) => `jsonb_set(${data}, '{${field.path.join(',')}}', '${JSON.stringify(field.purged)}'::jsonb, false)`,
        'e.data',
      );
      return `WHEN '${type}' THEN ${blanked}`;
    });
  return `CASE e.type ${cases.join(' ')} ELSE e.data END`;
}

const PURGED_DATA = purgedDataSql();
const TYPES_WITH_TEXT = Object.entries(TRANSCRIPT_FIELDS)
  .filter(([, fields]) => fields.length > 0)
  .map(([type]) => type);

/**
 * Purges runs' transcripts (CONTRACT section 22): the text fields of their session events are blanked in place
 * (the events stay, with their ids, versions and metadata, so the session folds, projects and relays as before)
 * and their chunks are purged from the run chunk stream; the run's row (its metadata) stays and records when.
 * Every purge is idempotent: a run already purged is not selected again, and blanking blank text changes nothing.
 */
export class TranscriptPurger {
  private manager: Promise<JetStreamManager> | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
  ) {}

  /** Purges at most `limit` runs that ended longer than `retentionMs` ago (by the database's clock), oldest first; answers how many. */
  async purgeEndedBefore(retentionMs: number, limit = TRANSCRIPT_PURGE_BATCH): Promise<number> {
    const runs: RunToPurge[] = await this.dataSource.query(
      `SELECT id, session_id FROM runs.runs
        WHERE transcript_purged_at IS NULL AND ended_at IS NOT NULL
          AND ended_at < now() - $1::bigint * interval '1 millisecond'
        ORDER BY ended_at LIMIT $2`,
      [retentionMs, limit],
    );
    await this.purge(runs);
    return runs.length;
  }

  /**
   * Every transcript of an intern whose teardown is completing, batch by batch; answers how many runs it purged.
   * Its runs were ended by the teardown's first step, so nothing writes to them any more.
   */
  async purgeIntern(internId: string): Promise<number> {
    let purged = 0;
    for (;;) {
      const runs: RunToPurge[] = await this.dataSource.query(
        `SELECT id, session_id FROM runs.runs WHERE intern_id = $1 AND transcript_purged_at IS NULL ORDER BY started_at LIMIT $2`,
        [internId, TRANSCRIPT_PURGE_BATCH],
      );
      if (runs.length === 0) return purged;
      await this.purge(runs);
      purged += runs.length;
    }
  }

  private async purge(runs: RunToPurge[]): Promise<void> {
    if (runs.length === 0) return;
    // The chunks first: a failure after them leaves the runs unmarked, and the next purge does it all again.
    for (const run of runs) await this.purgeChunks(run.id);
    const runIds = runs.map((run) => run.id);
    const streamIds = [...new Set(runs.map((run) => sessionStreamId(run.session_id)))];
    await this.dataSource.transaction(async (manager) => {
      // The one rewrite of stored events: found through the (stream_id, stream_version) index, then by run.
      await manager.query(
        `UPDATE runs.events e SET data = ${PURGED_DATA}
          WHERE e.stream_id = ANY($1::text[]) AND e.type = ANY($2::text[]) AND e.data->>'runId' = ANY($3::text[])`,
        [streamIds, TYPES_WITH_TEXT, runIds],
      );
      await manager.query(`UPDATE runs.runs SET transcript_purged_at = now() WHERE id = ANY($1::uuid[]) AND transcript_purged_at IS NULL`, [
        runIds,
      ]);
    });
  }

  private async purgeChunks(runId: string): Promise<void> {
    const jsm = await (this.manager ??= jetstreamManager(this.nc).catch((error: unknown) => {
      this.manager = null;
      throw error;
    }));
    try {
      await jsm.streams.purge(this.subjects.runChunkStreamName, { filter: this.subjects.runs.chunks(runId) });
    } catch (error) {
      // No chunk stream: no chunks to purge.
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    }
  }
}
