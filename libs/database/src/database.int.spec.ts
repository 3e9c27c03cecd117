import { MigrationInterface, QueryRunner } from 'typeorm';
import { createTestDatabase, TestDatabase } from '@interns/testing';
import { openDatabase } from './database';
import { PG_ERROR_CODES } from './pg-errors';

class CreateWidgets1700000000000 implements MigrationInterface {
  name = 'CreateWidgets1700000000000';
  async up(runner: QueryRunner): Promise<void> {
    await runner.query('CREATE TABLE widgets_test.widgets (id int primary key)');
  }
  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE widgets_test.widgets');
  }
}

describe('openDatabase', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('applies migrations once even when two processes start together', async () => {
    const options = {
      url: db.url,
      schema: 'widgets_test',
      migrations: [CreateWidgets1700000000000],
      applicationName: 'database.int.spec',
      migrate: true,
    };
    const [a, b] = await Promise.all([openDatabase(options), openDatabase(options)]);
    const rows = await a.query('SELECT count(*)::int AS n FROM widgets_test.widgets_test_migrations');
    expect(rows[0].n).toBe(1);
    await Promise.all([a.destroy(), b.destroy()]);
  });

  it('cancels a statement beyond statementTimeoutMs and frees its connection; migrations are not bound by it', async () => {
    const dataSource = await openDatabase({
      url: db.url,
      schema: 'timeout_test',
      // A migration that runs longer than the statement timeout still applies.
      migrations: [SlowMigration1700000000001],
      applicationName: 'database.int.spec',
      migrate: true,
      poolSize: 1,
      statementTimeoutMs: 300,
    });
    try {
      const started = Date.now();
      await expect(dataSource.query('SELECT pg_sleep(5)')).rejects.toMatchObject({ code: PG_ERROR_CODES.queryCanceled });
      expect(Date.now() - started).toBeLessThan(3000);
      // The pool's only connection is usable again at once.
      expect(await dataSource.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      expect(await dataSource.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '300ms' }]);
      expect((await dataSource.query('SELECT count(*)::int AS n FROM timeout_test.timeout_test_migrations'))[0].n).toBe(1);
    } finally {
      await dataSource.destroy();
    }
  });
});

class SlowMigration1700000000001 implements MigrationInterface {
  name = 'SlowMigration1700000000001';
  async up(runner: QueryRunner): Promise<void> {
    await runner.query('SELECT pg_sleep(0.6)');
  }
  down(): Promise<void> {
    return Promise.resolve();
  }
}
