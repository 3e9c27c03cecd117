import { loadConfig } from './config';

describe('loadConfig: DATABASE_STATEMENT_TIMEOUT_MS', () => {
  it('defaults to 5000, or half a shorter lifecycle route deadline', () => {
    expect(loadConfig({}).databaseStatementTimeoutMs).toBe(5000);
    expect(loadConfig({ LIFECYCLE_ROUTE_DEADLINE_MS: '1500' }).databaseStatementTimeoutMs).toBe(750);
  });

  it('must stay below LIFECYCLE_ROUTE_DEADLINE_MS', () => {
    expect(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '9999' }).databaseStatementTimeoutMs).toBe(9999);
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '10000' })).toThrow(
      'DATABASE_STATEMENT_TIMEOUT_MS (10000) must be below LIFECYCLE_ROUTE_DEADLINE_MS (10000)',
    );
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0' })).toThrow('DATABASE_STATEMENT_TIMEOUT_MS must be at least 1');
  });
});
