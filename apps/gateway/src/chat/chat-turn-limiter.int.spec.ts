import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { IDENTITY_SCHEMA, identityMigrations } from '@interns/identity';
import { createTestDatabase, TestDatabase } from '@interns/testing';
import { ChatTurnLimiter, TurnVerdict } from './chat-turn-limiter';

const TURNS = 3;

/** Opens the identity schema the way the gateway does; each call is one more "replica" pool. */
function openIdentity(url: string, migrate = true): Promise<DataSource> {
  return openDatabase({
    url,
    schema: IDENTITY_SCHEMA,
    migrations: identityMigrations,
    applicationName: 'chat-turn-limiter.int.spec',
    migrate,
  });
}

function member(): string {
  return `member:${randomUUID()}`;
}

async function consumeTimes(limiter: ChatTurnLimiter, caller: string, internId: string, times: number): Promise<TurnVerdict[]> {
  const verdicts: TurnVerdict[] = [];
  for (let i = 0; i < times; i += 1) verdicts.push(await limiter.consume(caller, internId));
  return verdicts;
}

function expectRefusal(verdict: TurnVerdict): void {
  expect(verdict.allowed).toBe(false);
  if (verdict.allowed) return;
  expect(Number.isInteger(verdict.retryAfterSeconds)).toBe(true);
  expect(verdict.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  expect(verdict.retryAfterSeconds).toBeLessThanOrEqual(60);
}

describe('ChatTurnLimiter', () => {
  let db: TestDatabase;
  let replicaA: DataSource;
  let replicaB: DataSource;
  let limiterA: ChatTurnLimiter;
  let limiterB: ChatTurnLimiter;

  beforeAll(async () => {
    db = await createTestDatabase();
    replicaA = await openIdentity(db.url);
    replicaB = await openIdentity(db.url);
    limiterA = new ChatTurnLimiter({ dataSource: replicaA, turnsPerMinute: TURNS });
    limiterB = new ChatTurnLimiter({ dataSource: replicaB, turnsPerMinute: TURNS });
  });

  afterAll(async () => {
    await replicaA.destroy();
    await replicaB.destroy();
    await db.drop();
  });

  it('keeps its counters (and the authentication failure counters) in unlogged tables: no WAL flush per turn', async () => {
    const rows: { relname: string; relpersistence: string }[] = await replicaA.query(
      `SELECT relname, relpersistence FROM pg_class
        WHERE relnamespace = $1::regnamespace AND relname IN ('chat_turn_limits', 'auth_failure_limits') ORDER BY relname`,
      [IDENTITY_SCHEMA],
    );
    expect(rows).toEqual([
      { relname: 'auth_failure_limits', relpersistence: 'u' },
      { relname: 'chat_turn_limits', relpersistence: 'u' },
    ]);
  });

  it('allows N turns in the window, then refuses with a Retry-After within the window', async () => {
    const caller = member();
    const internId = randomUUID();
    expect(await consumeTimes(limiterA, caller, internId, TURNS)).toEqual(Array(TURNS).fill({ allowed: true }));
    expectRefusal(await limiterA.consume(caller, internId));
    // Refused turns do not reopen the budget.
    expectRefusal(await limiterA.consume(caller, internId));
  });

  it('shares one budget between replicas on separate pools', async () => {
    const caller = `key:${randomUUID()}`;
    const internId = randomUUID();
    expect(await limiterA.consume(caller, internId)).toEqual({ allowed: true });
    expect(await limiterB.consume(caller, internId)).toEqual({ allowed: true });
    expect(await limiterA.consume(caller, internId)).toEqual({ allowed: true });
    expectRefusal(await limiterB.consume(caller, internId));
    expectRefusal(await limiterA.consume(caller, internId));
  });

  it('grants exactly N of many concurrent turns spread over both replicas', async () => {
    const caller = member();
    const internId = randomUUID();
    const verdicts = await Promise.all(
      Array.from({ length: 4 * TURNS }, (_, i) => (i % 2 === 0 ? limiterA : limiterB).consume(caller, internId)),
    );
    expect(verdicts.filter((verdict) => verdict.allowed)).toHaveLength(TURNS);
    verdicts.filter((verdict) => !verdict.allowed).forEach(expectRefusal);
  });

  it('keeps separate budgets per intern and per caller', async () => {
    const caller = member();
    const internId = randomUUID();
    await consumeTimes(limiterA, caller, internId, TURNS);
    expectRefusal(await limiterA.consume(caller, internId));
    expect(await limiterA.consume(caller, randomUUID())).toEqual({ allowed: true });
    expect(await limiterB.consume(member(), internId)).toEqual({ allowed: true });
    // Same member id seen as a key id is another caller.
    expect(await limiterB.consume(caller.replace('member:', 'key:'), internId)).toEqual({ allowed: true });
  });

  it('does not merge pairs whose plain concatenation would be equal', async () => {
    const suffix = randomUUID();
    await consumeTimes(limiterA, 'member:a', `b:${suffix}`, TURNS);
    expectRefusal(await limiterA.consume('member:a', `b:${suffix}`));
    expect(await limiterA.consume('member:a:b', suffix)).toEqual({ allowed: true });
  });

  it('rejects, rather than allowing or refusing, when the pool is closed', async () => {
    const replica = await openIdentity(db.url, false);
    const limiter = new ChatTurnLimiter({ dataSource: replica, turnsPerMinute: TURNS });
    await replica.destroy();
    await expect(limiter.consume(member(), randomUUID())).rejects.toThrow(Error);
  });

  it('rejects when the table is missing and never creates it at runtime', async () => {
    const bare = await createTestDatabase();
    const replica = await openIdentity(bare.url, false);
    try {
      const limiter = new ChatTurnLimiter({ dataSource: replica, turnsPerMinute: TURNS });
      await expect(limiter.consume(member(), randomUUID())).rejects.toThrow(/chat_turn_limits/);
      const [{ exists }] = await replica.query(`SELECT to_regclass('identity.chat_turn_limits') IS NOT NULL AS exists`);
      expect(exists).toBe(false);
    } finally {
      await replica.destroy();
      await bare.drop();
    }
  });

  it('refuses a non-positive or fractional budget and an uninitialized DataSource', async () => {
    expect(() => new ChatTurnLimiter({ dataSource: replicaA, turnsPerMinute: 0 })).toThrow('positive integer');
    expect(() => new ChatTurnLimiter({ dataSource: replicaA, turnsPerMinute: 1.5 })).toThrow('positive integer');
    const closed = await openIdentity(db.url, false);
    await closed.destroy();
    expect(() => new ChatTurnLimiter({ dataSource: closed, turnsPerMinute: TURNS })).toThrow('initialized');
  });
});
