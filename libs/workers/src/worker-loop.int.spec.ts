import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource, QueryRunner } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { LeaderLease } from './leader-lease';
import { WorkSignal } from './work-signal';
import { type RoundOutcome, WorkerLoop, type WorkerLoopOptions, type WorkerRound } from './worker-loop';

async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('WorkerLoop', () => {
  const warnings: string[] = [];
  const logger = { log: () => undefined, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  const loops: WorkerLoop[] = [];
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: 'workers', migrations: [], applicationName: 'worker-loop.int.spec', migrate: true });
  });

  afterEach(async () => {
    await Promise.all(loops.splice(0).map((loop) => loop.stop()));
    warnings.length = 0;
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  function loop(options: WorkerRound & Partial<Omit<WorkerLoopOptions, 'lease' | 'round'>>): WorkerLoop {
    const created = new WorkerLoop({ name: 'spec worker', pollIntervalMs: 10, logger, ...options } as WorkerLoopOptions);
    loops.push(created);
    return created;
  }

  /** Advisory locks held on the test database under `key`, by any session. */
  async function locksHeld(key: [string, string]): Promise<number> {
    const rows: { n: number }[] = await dataSource.query(
      `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND classid = hashtext($1)::oid AND objid = hashtext($2)::oid`,
      key,
    );
    return rows[0].n;
  }

  it('runs rounds on one replica at a time, through the lease connection, and hands over when the leader stops', async () => {
    const key: [string, string] = ['spec', `handover-${Date.now()}`];
    const rounds = { a: 0, b: 0 };
    const connections: QueryRunner[] = [];
    const replica = (name: 'a' | 'b') =>
      loop({
        name,
        lease: new LeaderLease(dataSource, key),
        round: async (leader: QueryRunner): Promise<RoundOutcome> => {
          rounds[name] += 1;
          connections.push(leader);
          // The round reads through the lease's own session: the one holding the lock.
          const [row] = await leader.query('SELECT pg_backend_pid() AS pid');
          const held: { n: number }[] = await leader.query(
            `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1`,
            [row.pid],
          );
          expect(held[0].n).toBe(1);
          return 'idle';
        },
      });
    const [a, b] = [replica('a'), replica('b')];
    a.start();
    await eventually(() => rounds.a >= 3, 'a few rounds of the first replica');
    b.start();
    await sleep(100);
    expect(rounds.b).toBe(0);
    expect([a.describe().leader, b.describe().leader]).toEqual([true, false]);
    expect(new Set(connections).size).toBe(1);

    await a.stop();
    await eventually(() => rounds.b >= 3, 'the standby to take over');
    expect(b.isLeader).toBe(true);
    await b.stop();
    expect(await locksHeld(key)).toBe(0);
  });

  it('backs off exponentially after failures, resigning each time, and recovers', async () => {
    const key: [string, string] = ['spec', `failing-${Date.now()}`];
    const failedAt: number[] = [];
    const forgotten: unknown[] = [];
    const failing = loop({
      lease: new LeaderLease(dataSource, key),
      firstBackoffMs: 40,
      maxBackoffMs: 160,
      onFailure: (error) => forgotten.push(error),
      round: async (): Promise<RoundOutcome> => {
        if (failedAt.length < 5) {
          failedAt.push(Date.now());
          throw new Error(`simulated failure ${failedAt.length}`);
        }
        return 'idle';
      },
    });
    failing.start();
    await eventually(() => failedAt.length === 5, 'five failed rounds');
    await eventually(() => failing.describe().consecutiveFailures === 0, 'a round that succeeds');

    const gaps = failedAt.slice(1).map((at, index) => at - failedAt[index]);
    // 40, 80, 160, then capped at 160 (timers fire late, never early).
    [40, 80, 160, 160].forEach((least, index) => expect(gaps[index]).toBeGreaterThanOrEqual(least - 5));
    expect(gaps[3]).toBeLessThan(300);
    expect(forgotten).toHaveLength(5);
    expect(warnings[0]).toBe('spec worker: Error: simulated failure 1; resigning, retrying in 40 ms');
    expect(failing.describe()).toEqual({
      name: 'spec worker',
      running: true,
      leader: true,
      consecutiveFailures: 0,
      lastError: 'Error: simulated failure 5',
    });
  });

  it('lets another replica lead while the leader backs off', async () => {
    const key: [string, string] = ['spec', `backoff-handover-${Date.now()}`];
    let broken = true;
    let standbyRounds = 0;
    const brokenLeader = loop({
      lease: new LeaderLease(dataSource, key),
      firstBackoffMs: 500,
      round: async (): Promise<RoundOutcome> => {
        if (broken) throw new Error('database went away');
        return 'idle';
      },
    });
    brokenLeader.start();
    await eventually(() => warnings.length === 1, 'the first failure');
    const standby = loop({
      lease: new LeaderLease(dataSource, key),
      round: async (): Promise<RoundOutcome> => {
        standbyRounds += 1;
        return 'idle';
      },
    });
    standby.start();
    await eventually(() => standbyRounds > 0, 'the standby to lead');
    broken = false;
    expect(brokenLeader.isLeader).toBe(false);
  });

  it('is woken by its signal, and a wake during a round skips the next sleep', async () => {
    const signal = new WorkSignal();
    const roundsAt: number[] = [];
    let wakeDuringRound = false;
    const slow = loop({
      pollIntervalMs: 60_000,
      signal,
      round: async (): Promise<RoundOutcome> => {
        roundsAt.push(Date.now());
        if (wakeDuringRound) {
          wakeDuringRound = false;
          signal.notify();
        }
        return 'idle';
      },
    });
    slow.start();
    await eventually(() => roundsAt.length === 1, 'the first round');
    await sleep(50);
    expect(roundsAt).toHaveLength(1);
    wakeDuringRound = true;
    signal.notify();
    // The notify inside the second round makes a third one follow at once.
    await eventually(() => roundsAt.length === 3, 'two rounds on one wake');
    await sleep(50);
    expect(roundsAt).toHaveLength(3);
  });

  it('looks again soon, not at the next poll, while a round reports its work held back', async () => {
    const outcomes: RoundOutcome[] = ['held', 'held', 'held', 'idle'];
    const roundsAt: number[] = [];
    const held = loop({
      pollIntervalMs: 60_000,
      round: async (): Promise<RoundOutcome> => {
        roundsAt.push(Date.now());
        return outcomes.shift() ?? 'idle';
      },
    });
    held.start();
    // Three held rounds: looked at again after 10, 20 and 40 ms, then idle until the poll, a minute away.
    await eventually(() => roundsAt.length === 4, 'the rounds after the held ones', 2_000);
    await sleep(100);
    expect(roundsAt).toHaveLength(4);
    expect(roundsAt[3] - roundsAt[0]).toBeGreaterThanOrEqual(60);
  });

  it('waits the quiet poll interval after a quiet round, the poll interval after an idle one, and a wake cuts either', async () => {
    const signal = new WorkSignal();
    const outcomes: RoundOutcome[] = ['idle', 'quiet'];
    const roundsAt: number[] = [];
    const quiet = loop({
      pollIntervalMs: 30,
      quietPollIntervalMs: 60_000,
      signal,
      round: async (): Promise<RoundOutcome> => {
        roundsAt.push(Date.now());
        return outcomes.shift() ?? 'quiet';
      },
    });
    quiet.start();
    // idle: the next round 30 ms on; quiet: none for a minute.
    await eventually(() => roundsAt.length === 2, 'the round after the idle one', 2_000);
    await sleep(200);
    expect(roundsAt).toHaveLength(2);
    signal.notify();
    await eventually(() => roundsAt.length === 3, 'the round the wake asked for', 2_000);
  });

  it('waits the poll interval after a quiet round when no quiet poll interval is set', async () => {
    let rounds = 0;
    const quiet = loop({
      pollIntervalMs: 20,
      round: async (): Promise<RoundOutcome> => {
        rounds += 1;
        return 'quiet';
      },
    });
    quiet.start();
    await eventually(() => rounds >= 4, 'rounds every poll interval', 2_000);
  });

  it('goes on at once while rounds report more work; without a lease every replica works', async () => {
    let rounds = 0;
    const round = async (): Promise<RoundOutcome> => ((rounds += 1) < 50 ? 'more' : 'idle');
    const busy = loop({ pollIntervalMs: 60_000, round });
    busy.start();
    await eventually(() => rounds === 50, 'fifty rounds without sleeping');
    expect(busy.describe().leader).toBeNull();
    const other = loop({ pollIntervalMs: 60_000, round });
    other.start();
    await eventually(() => rounds === 51, 'a round of the second replica');
  });

  it('stop() lets the round in flight and onStopped finish, then gives the lease up', async () => {
    const key: [string, string] = ['spec', `stop-${Date.now()}`];
    const order: string[] = [];
    let release: () => void = () => undefined;
    const inFlight = loop({
      lease: new LeaderLease(dataSource, key),
      round: async (): Promise<RoundOutcome> => {
        order.push('round started');
        await new Promise<void>((resolve) => (release = resolve));
        order.push('round finished');
        return 'idle';
      },
      onStopped: async () => {
        order.push(`stopped, lease held: ${await locksHeld(key)}`);
      },
    });
    inFlight.start();
    await eventually(() => order.length === 1, 'the round to start');
    const stopped = inFlight.stop();
    expect(inFlight.isStopping).toBe(true);
    await sleep(30);
    release();
    await stopped;
    expect(order).toEqual(['round started', 'round finished', 'stopped, lease held: 1']);
    expect(await locksHeld(key)).toBe(0);
    expect(inFlight.describe()).toMatchObject({ running: false, leader: false });
  });
});
