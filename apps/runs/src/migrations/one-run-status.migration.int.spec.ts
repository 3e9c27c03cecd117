/**
 * A database recorded with two status columns upgrades to one without losing a row: going runs stay going (a
 * run waiting on a question still waits), ended runs keep their status and finish, and each gets the ending
 * it was recorded with as its RUN_ENDINGS key.
 */
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { OneRunStatus1766300000000 } from './1766300000000-one-run-status.migration';
import { RUNS_MIGRATIONS, RUNS_SCHEMA } from './index';

/** Every migration before this one (later ones follow it in RUNS_MIGRATIONS). */
const BEFORE_ONE_STATUS = RUNS_MIGRATIONS.slice(0, RUNS_MIGRATIONS.indexOf(OneRunStatus1766300000000));

/** Runs as the two-column record kept them: internal status and finish, then the Run's status and finish. */
const RECORDED: [string, string | null, string, string | null][] = [
  ['active', null, 'running', null],
  ['active', null, 'awaiting_input', 'tool_calls'],
  ['finished', 'stop', 'completed', 'stop'],
  ['finished', 'length', 'completed', 'length'],
  ['finished', 'error', 'failed', 'error'],
  ['cancelled', 'cancelled:caller_cancelled', 'cancelled', 'stop'],
  ['cancelled', 'cancelled:intern_suspended', 'cancelled', 'error'],
  ['cancelled', 'cancelled:interaction_deadline', 'expired', 'error'],
  ['cancelled', 'cancelled:owner_lost', 'failed', 'error'],
];

describe('the one-run-status migration', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  const internId = randomUUID();
  const open = (migrations: typeof RUNS_MIGRATIONS) =>
    openDatabase({ url: db.url, schema: RUNS_SCHEMA, migrations, applicationName: 'one-run-status.int.spec', migrate: true });

  beforeAll(async () => {
    db = await createTestDatabase();
    const before = await open(BEFORE_ONE_STATUS);
    await before.query(`INSERT INTO runs.sessions (id, intern_id, caller_id, origin, created_at) VALUES ('s-1', $1, 'member:alice', 'chat', now())`, [
      internId,
    ]);
    for (const [index, [status, finishReason, runStatus, runFinishReason]] of RECORDED.entries()) {
      await before.query(
        `INSERT INTO runs.runs (id, session_id, intern_id, owner_id, approval_mode, model, status, finish_reason, started_at,
           origin, caller_id, run_status, run_finish_reason)
         VALUES ($1, 's-1', $2, 'owner-1', 'manual', 'm', $3, $4, now() + make_interval(secs => $5), 'chat', 'member:alice', $6, $7)`,
        [randomUUID(), internId, status, finishReason, index, runStatus, runFinishReason],
      );
    }
    await before.destroy();
    dataSource = await open(RUNS_MIGRATIONS);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('keeps every run with the status and finish it showed, and why it ended', async () => {
    const rows = await dataSource.query('SELECT status, finish_reason, end_reason FROM runs.runs ORDER BY started_at');
    expect(rows).toEqual([
      { status: 'running', finish_reason: null, end_reason: null },
      { status: 'awaiting_input', finish_reason: 'tool_calls', end_reason: null },
      { status: 'completed', finish_reason: 'stop', end_reason: 'stop' },
      { status: 'completed', finish_reason: 'length', end_reason: 'length' },
      { status: 'failed', finish_reason: 'error', end_reason: 'error' },
      { status: 'cancelled', finish_reason: 'stop', end_reason: 'caller_cancelled' },
      { status: 'cancelled', finish_reason: 'error', end_reason: 'intern_suspended' },
      { status: 'expired', finish_reason: 'error', end_reason: 'interaction_deadline' },
      { status: 'failed', finish_reason: 'error', end_reason: 'owner_lost' },
    ]);
  });

  it('has one status column, which takes only the statuses a Run shows', async () => {
    const columns = await dataSource.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'runs' AND table_name = 'runs' AND column_name LIKE '%status%'`,
    );
    expect(columns).toEqual([{ column_name: 'status' }]);
    await expect(dataSource.query(`UPDATE runs.runs SET status = 'active'`)).rejects.toThrow(/runs_status_check/);
  });
});
