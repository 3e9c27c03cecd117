import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { LEASE_EXPIRY_MS, PostgresWorkspaceDiskLeases } from './workspace-disk-leases';

/** One runs process at a time may mount an intern's workspace image (two would corrupt it). */
describe('PostgresWorkspaceDiskLeases', () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: 'runs', migrations: RUNS_MIGRATIONS, applicationName: 'disk-leases.int.spec', migrate: true });
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('lets one holder at a time claim an intern, the same holder again, and the next once released', async () => {
    const internId = randomUUID();
    const first = new PostgresWorkspaceDiskLeases(dataSource);
    const second = new PostgresWorkspaceDiskLeases(dataSource);
    expect(await first.claim(internId)).toBe(true);
    expect(await first.claim(internId)).toBe(true);
    expect(await second.claim(internId)).toBe(false);
    // Another intern is free.
    expect(await second.claim(randomUUID())).toBe(true);
    await first.release(internId);
    expect(await second.claim(internId)).toBe(true);
    expect(await first.claim(internId)).toBe(false);
    await Promise.all([first.releaseAll(), second.releaseAll()]);
    expect(await dataSource.query('SELECT * FROM runs.workspace_disk_leases')).toEqual([]);
  });

  it('lets another holder take over a lease its holder stopped renewing (a process that died)', async () => {
    const internId = randomUUID();
    const dead = new PostgresWorkspaceDiskLeases(dataSource);
    const next = new PostgresWorkspaceDiskLeases(dataSource);
    expect(await dead.claim(internId)).toBe(true);
    await dataSource.query(`UPDATE runs.workspace_disk_leases SET renewed_at = now() - make_interval(secs => $1) WHERE intern_id = $2`, [
      LEASE_EXPIRY_MS / 1000 + 1,
      internId,
    ]);
    expect(await next.claim(internId)).toBe(true);
    expect(await dead.claim(internId)).toBe(false);
    await Promise.all([dead.releaseAll(), next.releaseAll()]);
  });
});
