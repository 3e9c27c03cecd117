import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager, type MsgRequest, type StoredMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import type { IntegrationEvent, IntegrationEventType, Subjects } from '@interns/contracts';
import { sessionStreamId, TRANSCRIPT_FIELDS, type TranscriptField } from '@interns/runs-domain';

/** Runs purged per transaction: a backlog is worked off in short transactions, never one long lock. */
export const TRANSCRIPT_PURGE_BATCH = 50;

interface RunToPurge {
  id: string;
  session_id: string;
}

const SQL_NAME = /^[A-Za-z]+$/;

/**
 * The integration events whose data carries a run's words (a question's wording, a failure's message: CONTRACT
 * section 13), kept in the runs events stream for JETSTREAM_MAX_AGE_MS: purged with the transcripts they quote.
 */
const WORDY_INTEGRATION_EVENTS = ['question.opened', 'run.failed'] as const satisfies readonly IntegrationEventType[];

/**
 * How long a teardown's purge may scan the runs events stream for the intern's wordy integration events. The
 * scan is one request per message of those types, and the stream may hold many (up to JETSTREAM_MAX_BYTES):
 * past this budget the teardown goes on (it must never hang, interface section 22) and the rest of them leave
 * the stream with its age limit (JETSTREAM_MAX_AGE_MS) or the retention sweep, whichever comes first.
 */
export const INTERN_EVENT_SCAN_BUDGET_MS = 10_000;

/** What to do with one stored integration event while scanning its type from the first: `stop` ends the scan. */
type IntegrationEventVerdict = 'delete' | 'keep' | 'stop';

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
    private readonly internEventScanBudgetMs = INTERN_EVENT_SCAN_BUDGET_MS,
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

  /** Deletes the wordy integration events (questions, failures) published longer than `retentionMs` ago; answers how many. */
  purgeIntegrationEventsBefore(retentionMs: number): Promise<number> {
    const cutoff = Date.now() - retentionMs;
    // A type's messages are in the order they were stored: the first younger one ends its scan.
    return this.deleteIntegrationEvents((message) => (message.time.getTime() < cutoff ? 'delete' : 'stop'));
  }

  /**
   * Every transcript of an intern whose teardown is completing, batch by batch, and the wordy integration events
   * about it; answers how many runs it purged. Its runs were ended by the teardown's first step, so nothing writes
   * to them any more.
   */
  async purgeIntern(internId: string): Promise<number> {
    let purged = 0;
    for (;;) {
      const runs: RunToPurge[] = await this.dataSource.query(
        `SELECT id, session_id FROM runs.runs WHERE intern_id = $1 AND transcript_purged_at IS NULL ORDER BY started_at LIMIT $2`,
        [internId, TRANSCRIPT_PURGE_BATCH],
      );
      if (runs.length === 0) break;
      await this.purge(runs);
      purged += runs.length;
    }
    const scanUntil = Date.now() + this.internEventScanBudgetMs;
    await this.deleteIntegrationEvents((message) => {
      if (Date.now() > scanUntil) return 'stop';
      return message.json<IntegrationEvent>().data.intern_id === internId ? 'delete' : 'keep';
    });
    return purged;
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

  /**
   * Scans each wordy type of the event streams holding runs' integration events from its first message, one message at a time (nothing is
   * held but the message in hand), and deletes what `verdict` picks (erased on disk, not only unlinked).
   */
  private async deleteIntegrationEvents(verdict: (message: StoredMsg) => IntegrationEventVerdict): Promise<number> {
    const jsm = await this.jetstream();
    let deleted = 0;
    // The runs events stream, and the gateways' workspace event stream (GET /events), which sources a copy of it
    // under the same subjects (absent until a gateway made it: nothing to delete there).
    const runsStream = this.subjects.eventStreamName('runs');
    deleted += await this.deleteFrom(jsm, runsStream, verdict);
    // The copy lags the source a little: what the runs stream held when its scan began is copied before this one.
    const copy = this.subjects.workspaceEventStreamName;
    if (await untilSourced(jsm, copy, runsStream, Date.now() + SOURCE_CATCH_UP_MS)) deleted += await this.deleteFrom(jsm, copy, verdict);
    return deleted;
  }

  private async deleteFrom(jsm: JetStreamManager, stream: string, verdict: (message: StoredMsg) => IntegrationEventVerdict): Promise<number> {
    let deleted = 0;
    for (const type of WORDY_INTEGRATION_EVENTS) {
      const subject = this.subjects.integrationEvent(type);
      for (let seq = 1; ; ) {
        const message = await nextMessage(jsm, stream, subject, seq);
        if (message === null) break;
        const decision = verdict(message);
        if (decision === 'stop') break;
        if (decision === 'delete') {
          await jsm.streams.deleteMessage(stream, message.seq);
          deleted += 1;
        }
        seq = message.seq + 1;
      }
    }
    return deleted;
  }

  private jetstream(): Promise<JetStreamManager> {
    return (this.manager ??= jetstreamManager(this.nc).catch((error: unknown) => {
      this.manager = null;
      throw error;
    }));
  }

  private async purgeChunks(runId: string): Promise<void> {
    const jsm = await this.jetstream();
    try {
      await jsm.streams.purge(this.subjects.runChunkStreamName, { filter: this.subjects.runs.chunks(runId) });
    } catch (error) {
      // No chunk stream: no chunks to purge.
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    }
  }
}

/** How long a purge waits for the workspace event stream to have copied what its source holds. */
const SOURCE_CATCH_UP_MS = 5_000;

/**
 * Waits until `stream` has copied every message of its source `source` (the source's lag 0), at most until
 * `deadline`; false when `stream` does not exist (no gateway made it: nothing was copied).
 */
async function untilSourced(jsm: JetStreamManager, stream: string, source: string, deadline: number): Promise<boolean> {
  for (;;) {
    let lag: number;
    try {
      lag = (await jsm.streams.info(stream)).sources?.find((one) => one.name === source)?.lag ?? 0;
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return false;
      throw error;
    }
    if (lag === 0 || Date.now() > deadline) return true;
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** The first message on `subject` at or after `seq`; null when there is none (or no stream). */
async function nextMessage(jsm: JetStreamManager, stream: string, subject: string, seq: number): Promise<StoredMsg | null> {
  try {
    // nats-server's STREAM.MSG.GET takes `next_by_subj` (since 2.9); the client types only its other two forms.
    return await jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as unknown as MsgRequest);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return null;
    throw error;
  }
}
