import { MigrationInterface, QueryRunner } from 'typeorm';
import { createTestDatabase, TestDatabase } from '@interns/testing';
import { openDatabase } from './database';

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
});
