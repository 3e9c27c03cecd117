import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { DomainError } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { type EventMetadata, PostgresEventStore, type StreamSnapshot } from '@interns/event-store';
import type { RunProgressEvent, SessionCommand } from '@interns/runs-domain';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { OwnedSession } from './owned-session';
import { sessionReadModelProjection } from './session-read-model.projection';
import { SessionStreams } from './session-streams';

const METADATA: EventMetadata = { correlation_id: 'c-1', causation_id: null, actor: 'member:alice' };
const at = '2026-11-21T10:00:00.000Z';

/** The real store, counting how often a whole session stream is read (by a load or a reload after a conflict). */
class CountingStore extends PostgresEventStore {
  loads = 0;

  override readStream(streamId: string): Promise<StreamSnapshot> {
    this.loads++;
    return super.readStream(streamId);
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
  let store: CountingStore;
  let streams: SessionStreams;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: 'runs',
      migrations: RUNS_MIGRATIONS,
      applicationName: 'owned-session.int.spec',
      migrate: true,
    });
    store = new CountingStore(dataSource, { schema: 'runs', projections: [sessionReadModelProjection] });
    streams = new SessionStreams(store);
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
    store.loads = 0;
    return { owned: new OwnedSession(streams, sessionId, session), sessionId, runId };
  }

  it('records a run without reading its session again, and keeps the state a reload would build', async () => {
    const { owned, sessionId, runId } = await startedRun();
    for (let turn = 1; turn <= 100; turn++) await owned.execute([progress(runId, `turn ${turn}`)], METADATA);
    await owned.execute([{ type: 'FinishRunAtLimit', runId, at }], METADATA);

    expect(store.loads).toBe(0);
    const reloaded = await streams.load(sessionId);
    expect(reloaded.version).toBe(2 + 100 + 1);
    expect(owned.state).toEqual(reloaded.state);
  });

  it("takes the run's own concurrent writes one after another, without a conflict", async () => {
    const { owned, sessionId, runId } = await startedRun();
    await Promise.all(Array.from({ length: 20 }, (_, index) => owned.execute([progress(runId, `piece ${index}`)], METADATA)));

    expect(store.loads).toBe(0);
    const reloaded = await streams.load(sessionId);
    expect(reloaded.events.filter((event) => event.type === 'OutputProduced')).toHaveLength(20);
    expect(reloaded.version).toBe(22);
  });

  it('catches up once with what another writer appended, and decides on that', async () => {
    const { owned, sessionId, runId } = await startedRun();
    await streams.execute(sessionId, [{ type: 'JoinPrompt', text: 'also this', at }], METADATA);
    store.loads = 0;

    await owned.execute([progress(runId, 'after the steer')], METADATA);
    expect(store.loads).toBe(1);
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
