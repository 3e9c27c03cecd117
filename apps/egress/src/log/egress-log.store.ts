import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { CursorCodec, DomainError, type EgressLogEntry, type EgressLogPage, type EgressLogRecord } from '@interns/contracts';


/** A row as pg returns it: bigint columns (seq, bytes) come back as text. */
type LogRow = Omit<EgressLogRecord, 'bytes_out' | 'bytes_in'> & { seq: string; bytes_out: string; bytes_in: string };

const LOG_COLUMNS = `seq, id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, run_id, host, port, method, path,
  decision, reason, secrets, status, bytes_out, bytes_in`;

/** Rows one sweep or purge deletes at a time: a long history goes in batches, never one long transaction. */
export const EGRESS_LOG_PURGE_BATCH = 5_000;

function recordOf({ seq: _seq, bytes_out, bytes_in, ...row }: LogRow): EgressLogRecord {
  return { ...row, bytes_out: Number(bytes_out), bytes_in: Number(bytes_in) };
}

/** The egress log (interface section 19): one row per request the proxy handled, per intern, newest first. */
export class EgressLogStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly cursors: CursorCodec,
  ) {}

  /** Loads the store with its cursor key (made by the migration). */
  static async open(dataSource: DataSource): Promise<EgressLogStore> {
    const [row]: { value: string }[] = await dataSource.query(`SELECT value FROM egress.settings WHERE name = 'cursor_secret'`);
    if (row === undefined) throw new Error('egress.settings has no cursor_secret: the egress migration did not run');
    return new EgressLogStore(dataSource, new CursorCodec(row.value));
  }

  async append(internId: string, runId: string | null, entry: EgressLogEntry): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO egress.log (id, intern_id, run_id, at, host, port, method, path, decision, reason, secrets, status, bytes_out, bytes_in)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      [
        randomUUID(),
        internId,
        runId,
        entry.at,
        entry.host,
        entry.port,
        entry.method,
        entry.path,
        entry.decision,
        entry.reason,
        entry.secrets,
        entry.status,
        entry.bytes_out,
        entry.bytes_in,
      ],
    );
  }

  /** One page of an intern's log, newest first; `startingAfter` is a cursor this store issued for that intern. */
  async page(internId: string, limit: number, startingAfter: string | null): Promise<EgressLogPage> {
    const values: unknown[] = [internId];
    let after = '';
    if (startingAfter !== null) {
      const position = this.cursors.decode(startingAfter);
      if (position.scope !== internId || !/^[0-9]+$/.test(position.id)) throw new DomainError('invalid_body', 'starting_after is not a valid cursor');
      after = ` AND seq < $${values.push(position.id)}`;
    }
    const rows: LogRow[] = await this.dataSource.query(
      `SELECT ${LOG_COLUMNS} FROM egress.log WHERE intern_id = $1${after} ORDER BY seq DESC LIMIT $${values.push(limit + 1)}`,
      values,
    );
    const page = rows.slice(0, limit);
    const result: EgressLogPage = { data: page.map(recordOf), has_more: rows.length > limit };
    const last = page[page.length - 1];
    if (result.has_more && last !== undefined) result.next_cursor = this.cursors.encode({ createdAt: last.at, id: last.seq, scope: internId });
    return result;
  }

  /** Deletes up to a batch of an intern's entries; answers how many went. */
  async purgeIntern(internId: string): Promise<number> {
    const [, deleted] = (await this.dataSource.query(
      `DELETE FROM egress.log WHERE seq IN (SELECT seq FROM egress.log WHERE intern_id = $1 LIMIT ${EGRESS_LOG_PURGE_BATCH})`,
      [internId],
    )) as [unknown[], number];
    return deleted;
  }

  /** Deletes up to a batch of entries older than `retentionMs`; answers how many went. */
  async purgeOlderThan(retentionMs: number): Promise<number> {
    const [, deleted] = (await this.dataSource.query(
      `DELETE FROM egress.log WHERE seq IN (
         SELECT seq FROM egress.log WHERE at < now() - make_interval(secs => $1::double precision / 1000) LIMIT ${EGRESS_LOG_PURGE_BATCH})`,
      [retentionMs],
    )) as [unknown[], number];
    return deleted;
  }
}
