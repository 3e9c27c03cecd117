import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { MalformedEventError } from './integration-event';
import { ANALYTICS_MIGRATIONS } from '../migrations';
import { EventFactory, runFact, type RunFactRow, statusChanges, WORKSPACE } from '../testing/facts.fixture';
import { FactsApplier } from './facts-applier';

/** The facts each integration event type leaves, applied directly (the consumer's tests cover delivery). */
describe('analytics facts applier', () => {
  const factory = new EventFactory();
  let db: TestDatabase;
  let dataSource: DataSource;
  let applier: FactsApplier;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: 'analytics',
      migrations: ANALYTICS_MIGRATIONS,
      applicationName: 'facts-applier.int.spec',
      migrate: true,
    });
    applier = new FactsApplier(dataSource);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('joins a run with its intern when their events are applied at the same moment', async () => {
    const runs = Array.from({ length: 15 }, () => factory.run());
    await Promise.all(runs.flatMap((run) => [applier.apply(run.started), applier.apply(factory.internCreated(run.internId))]));
    const rows: RunFactRow[] = await dataSource.query('SELECT * FROM analytics.run_facts WHERE run_id = ANY($1)', [
      runs.map((run) => run.runId),
    ]);
    expect(rows).toHaveLength(runs.length);
    for (const row of rows) {
      expect(row).toMatchObject({ user_id: 'alice', origin: 'chat', workspace_id: WORKSPACE, organization_id: 'acme' });
    }
  });

  it('records failed and cancelled runs with their reasons and usage', async () => {
    const [failed, cancelled] = [factory.run(), factory.run()];
    const error = { reason: 'model_unavailable', message: 'no provider' };
    await applier.apply(
      factory.event(failed.sessionId, 'run.failed', { ...failed.ref, origin: 'chat', finish_reason: 'error', usage: null, error }),
    );
    const usage = { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 };
    await applier.apply(
      factory.event(cancelled.sessionId, 'run.cancelled', { ...cancelled.ref, origin: 'chat', reason: 'caller_cancelled', usage }),
    );
    expect(await runFact(dataSource, failed.runId)).toMatchObject({
      finish_reason: 'error',
      error_reason: 'model_unavailable',
      origin: 'chat',
      total_tokens: null,
    });
    expect(await runFact(dataSource, cancelled.runId)).toMatchObject({
      finish_reason: 'cancelled',
      cancel_reason: 'caller_cancelled',
      total_tokens: 3,
    });
  });

  it('keeps a deleted intern, destroyed, with its last status before', async () => {
    const internId = randomUUID();
    const changed = (status: 'stopped' | 'queued', previous: 'stopped' | null) =>
      factory.event(internId, 'intern.status_changed', { intern_id: internId, status, previous_status: previous, progress: null });
    for (const event of [factory.internCreated(internId), changed('stopped', null), changed('queued', 'stopped')]) {
      await applier.apply(event);
    }
    await applier.apply(factory.event(internId, 'intern.deleted', { intern_id: internId }, '2030-01-02T00:00:00.000Z'));
    expect(await statusChanges(dataSource, internId)).toEqual(['stopped', 'queued', 'destroyed']);
    const [intern] = await dataSource.query('SELECT status, destroyed_at FROM analytics.intern_facts WHERE intern_id = $1', [internId]);
    expect(intern).toEqual({ status: 'destroyed', destroyed_at: new Date('2030-01-02T00:00:00.000Z') });
  });

  it('ignores what it keeps no facts of, and refuses a newer version than it reads', async () => {
    const run = factory.run();
    const question = factory.event(run.sessionId, 'question.opened', {
      ...run.ref,
      tool_call_id: 'call-1',
      arguments: { kind: 'elicitation', message: 'which?', fields: [] },
      expires_at: '2030-01-01T11:00:00.000Z',
    });
    expect(await applier.apply(question)).toBe('ignored');
    expect(await applier.apply({ ...run.started, type: 'run.teleported' })).toBe('ignored');
    await expect(applier.apply({ ...run.started, version: 2 })).rejects.toThrow(MalformedEventError);
    expect(await runFact(dataSource, run.runId)).toBeUndefined();
  });
});
