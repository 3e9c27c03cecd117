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

describe('loadConfig: MIGRATIONS_DATABASE_URL and the roles\' passwords', () => {
  const ROLE_URL = 'postgres://interns_runs:secret@db:5432/interns';
  const OWNER_URL = 'postgres://owner:other-secret@db:5432/interns';

  it('migrates with DATABASE_URL unless MIGRATIONS_DATABASE_URL is set (one URL for everything, as before roles)', () => {
    expect(loadConfig({}).migrationsDatabaseUrl).toBe('postgres://postgres@127.0.0.1:5432/interns');
    expect(loadConfig({ DATABASE_URL: OWNER_URL }).migrationsDatabaseUrl).toBe(OWNER_URL);
    expect(loadConfig({ DATABASE_URL: ROLE_URL, MIGRATIONS_DATABASE_URL: OWNER_URL })).toMatchObject({
      databaseUrl: ROLE_URL,
      migrationsDatabaseUrl: OWNER_URL,
    });
  });

  it('refuses a MIGRATIONS_DATABASE_URL naming another database, or no URL, without echoing a password', () => {
    const other = () => loadConfig({ DATABASE_URL: ROLE_URL, MIGRATIONS_DATABASE_URL: 'postgres://owner:other-secret@db:5432/staging' });
    expect(other).toThrow('MIGRATIONS_DATABASE_URL names database "staging" but DATABASE_URL names "interns": both must name the same database');
    expect(() => loadConfig({ DATABASE_URL: ROLE_URL, MIGRATIONS_DATABASE_URL: 'owner:other-secret@db' })).toThrow(
      /^MIGRATIONS_DATABASE_URL must be a postgres:\/\/ URL$/,
    );
    for (const attempt of [other, () => loadConfig({ DATABASE_URL: ROLE_URL, MIGRATIONS_DATABASE_URL: 'owner:other-secret@db' })]) {
      try {
        attempt();
      } catch (error) {
        expect((error as Error).message).not.toMatch(/secret/);
      }
    }
  });

  it("reads each service role's password from <SERVICE>_DATABASE_PASSWORD (unset or empty: none)", () => {
    expect(loadConfig({ RUNS_DATABASE_PASSWORD: 'r', GATEWAY_DATABASE_PASSWORD: '' }).databaseRolePasswords).toEqual({
      gateway: null,
      lifecycle: null,
      runs: 'r',
      analytics: null,
      webhooks: null,
      egress: null,
    });
  });
});
