import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { CreateInternBody, CreateInternRequest, DomainError, Principal } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { LIFECYCLE_SCHEMA, lifecycleMigrations } from '../migrations';
import { type IdempotencyClaim, idempotencyClaim, IdempotencyKeys, IdempotencyRace, type IdempotentCreate } from './idempotency-keys';

const WORKSPACE = randomUUID();
const alice: Principal = {
  kind: 'user',
  organizationId: 'org-1',
  workspaceId: WORKSPACE,
  memberId: 'alice',
  keyId: 'key-alice',
  internId: null,
  scopes: [],
  chatappInstallRequired: false,
};

function request(body: CreateInternBody, idempotencyKey: string | null, principal = alice): CreateInternRequest {
  return { context: { correlationId: randomUUID(), principal }, body, idempotencyKey };
}

function claimOf(body: CreateInternBody, key: string, principal = alice): IdempotencyClaim {
  const claim = idempotencyClaim(request(body, key, principal));
  if (claim === null) throw new Error('a request with a key has a claim');
  return claim;
}

const nameTaken = () => new DomainError('name_taken', 'an intern with this name already exists');

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('IdempotencyKeys', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let keys: IdempotencyKeys;
  let created: string[];

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: LIFECYCLE_SCHEMA,
      migrations: lifecycleMigrations,
      applicationName: 'idempotency-keys.int.spec',
      migrate: true,
    });
    keys = new IdempotencyKeys(dataSource);
  });

  beforeEach(() => {
    created = [];
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  /** A create that remembers the claim in its transaction, holding the transaction open until `commit` resolves. */
  function creating(claim: IdempotencyClaim | null, commit: Promise<void> = Promise.resolve()): IdempotentCreate<string> {
    return {
      create: () =>
        dataSource.transaction(async (manager) => {
          const internId = randomUUID();
          created.push(internId);
          if (claim !== null) await keys.remember(manager, claim, internId);
          await commit;
          return `created ${internId}`;
        }),
      replay: async (internId) => `replayed ${internId}`,
      lostToTwin: (error) => error instanceof DomainError && error.reason === 'name_taken',
    };
  }

  it('creates as asked without a key, and lets its errors through', async () => {
    expect(idempotencyClaim(request({ name: 'ada' }, null))).toBeNull();
    expect(await keys.once(null, creating(null))).toBe(`created ${created[0]}`);

    const refused = keys.once(null, { ...creating(null), create: () => Promise.reject(nameTaken()) });
    await expect(refused).rejects.toMatchObject({ reason: 'name_taken' });
  });

  it('creates once per key, and answers a repeat of the same body (in any key order) as a replay', async () => {
    const key = randomUUID();
    const claim = claimOf({ name: 'ada', description: 'd' }, key);
    const first = await keys.once(claim, creating(claim));
    expect(first).toBe(`created ${created[0]}`);

    const reordered = claimOf({ description: 'd', name: 'ada' }, key);
    expect(reordered).toEqual(claim);
    expect(await keys.once(reordered, creating(reordered))).toBe(`replayed ${created[0]}`);
    expect(created).toHaveLength(1);
  });

  it('refuses the key with another body, and keeps keys apart per caller', async () => {
    const key = randomUUID();
    await keys.once(claimOf({ name: 'ada' }, key), creating(claimOf({ name: 'ada' }, key)));

    const reused = keys.once(claimOf({ name: 'grace' }, key), creating(claimOf({ name: 'grace' }, key)));
    await expect(reused).rejects.toMatchObject({ reason: 'idempotency_key_reused' });

    const bob = { ...alice, memberId: 'bob' };
    const bobs = await keys.once(claimOf({ name: 'grace' }, key, bob), creating(claimOf({ name: 'grace' }, key, bob)));
    expect(bobs).toBe(`created ${created[1]}`);
  });

  it('answers a concurrent twin that commits its key first as a replay of what the twin created', async () => {
    const claim = claimOf({ name: 'ada' }, randomUUID());
    let commit!: () => void;
    const first = keys.once(claim, creating(claim, new Promise<void>((resolve) => (commit = resolve))));
    await until(async () => created.length === 1);
    // The twin finds no key yet, creates, and waits on the first one's uncommitted key.
    const twin = keys.once(claim, creating(claim));
    await until(async () => {
      const [{ waiting }] = await dataSource.query(
        `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return waiting > 0;
    });
    commit();

    expect(await first).toBe(`created ${created[0]}`);
    expect(await twin).toBe(`replayed ${created[0]}`);
    expect(created).toHaveLength(2);
  });

  it('answers a create refused on the name as a replay when a twin with the key committed meanwhile', async () => {
    const claim = claimOf({ name: 'ada' }, randomUUID());
    const twinId = randomUUID();
    const replayed = await keys.once(claim, {
      ...creating(claim),
      create: async () => {
        await dataSource.transaction((manager) => keys.remember(manager, claim, twinId));
        throw nameTaken();
      },
    });
    expect(replayed).toBe(`replayed ${twinId}`);

    const alone = keys.once(claimOf({ name: 'grace' }, randomUUID()), { ...creating(null), create: () => Promise.reject(nameTaken()) });
    await expect(alone).rejects.toMatchObject({ reason: 'name_taken' });
  });

  it('gives up when races keep being lost to a twin that never shows', async () => {
    let tries = 0;
    const lost = keys.once(claimOf({ name: 'ada' }, randomUUID()), {
      ...creating(null),
      create: async () => {
        tries++;
        throw new IdempotencyRace();
      },
    });
    await expect(lost).rejects.toBeInstanceOf(IdempotencyRace);
    expect(tries).toBe(4);
  });
});
