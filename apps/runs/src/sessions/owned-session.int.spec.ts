import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { DomainError } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { type EventMetadata, PostgresEventStore } from '@interns/event-store';
import type { RunProgressEvent, SessionCommand } from '@interns/runs-domain';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { OwnedSession } from './owned-session';
import { sessionReadModelProjection } from './session-read-model.projection';
import { type LoadedSession, SessionStreams } from './session-streams';

const METADATA: EventMetadata = { correlation_id: 'c-1', causation_id: null, actor: 'member:alice' };
const at = '2026-11-21T10:00:00.000Z';

/** The real streams, counting how often a whole session stream is read. */
class CountingStreams extends SessionStreams {
  loads = 0;

  override load(sessionId: string): Promise<LoadedSession> {
    this.loads++;
    return super.load(sessionId);
  }
}

const progress = (runId: string, text: string): SessionCommand => ({
  type: 'RecordProgress',
  runId,
  events: [{ type: 'OutputProduced', data: { runId, text } } satisfies RunProgressEvent],
});

describe('OwnedSession', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let streams: CountingStreams;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: 'runs',
      migrations: RUNS_MIGRATIONS,
      applicationName: 'owned-session.int.spec',
      migrate: true,
    });
    streams = new CountingStreams(new PostgresEventStore(dataSource, { schema: 'runs', projections: [sessionReadModelProjection] }));
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  /** A session with a going run, as RunHost starts it: the owner's session is the one the start left. */
  async function startedRun(): Promise<{ owned: OwnedSession; sessionId: string; runId: string }> {
    const sessionId = randomUUID();
    const runId = randomUUID();
    const session = await streams.execute(
      sessionId,
      [
        { type: 'OpenSession', sessionId, internId: randomUUID(), callerId: 'member:alice', origin: 'chat', at },
        { type: 'StartRun', runId, prompt: 'go', approvalMode: 'self-drive', model: 'local/scripted', ownerId: 'owner-1', origin: 'chat', at },
      ],
      METADATA,
    );
    streams.loads = 0;
    return { owned: new OwnedSession(streams, sessionId, session), sessionId, runId };
  }

  it('records a run without reading its session again, and keeps the state a reload would build', async () => {
    const { owned, sessionId, runId } = await startedRun();
    for (let turn = 1; turn <= 100; turn++) await owned.execute([progress(runId, `turn ${turn}`)], METADATA);
    await owned.execute([{ type: 'FinishRunAtLimit', runId, at }], METADATA);

    expect(streams.loads).toBe(0);
    const reloaded = await streams.load(sessionId);
    expect(reloaded.version).toBe(2 + 100 + 1);
    expect(owned.state).toEqual(reloaded.state);
  });

  it("takes the run's own concurrent writes one after another, without a conflict", async () => {
    const { owned, sessionId, runId } = await startedRun();
    await Promise.all(Array.from({ length: 20 }, (_, index) => owned.execute([progress(runId, `piece ${index}`)], METADATA)));

    expect(streams.loads).toBe(0);
    const reloaded = await streams.load(sessionId);
    expect(reloaded.events.filter((event) => event.type === 'OutputProduced')).toHaveLength(20);
    expect(reloaded.version).toBe(22);
  });

  it('catches up once with what another writer appended, and decides on that', async () => {
    const { owned, sessionId, runId } = await startedRun();
    await streams.execute(sessionId, [{ type: 'JoinPrompt', text: 'also this', at }], METADATA);
    streams.loads = 0;

    await owned.execute([progress(runId, 'after the steer')], METADATA);
    expect(streams.loads).toBe(1);
    expect((await streams.load(sessionId)).events.map((event) => event.type)).toEqual([
      'SessionOpened',
      'RunStarted',
      'PromptJoined',
      'OutputProduced',
    ]);

    // The run was ended elsewhere (an orphan sweep): after catching up, the decider refuses more progress.
    await streams.execute(sessionId, [{ type: 'CancelRun', runId, reason: 'owner_lost', at }], METADATA);
    const refused = await owned.execute([progress(runId, 'too late')], METADATA).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({ reason: 'interaction_not_pending' });
    expect(owned.state).toMatchObject({ kind: 'open', activeRun: null });
  });
});
