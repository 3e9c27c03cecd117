import { describeEndpoint, natsEndpoints, postgresEndpoint } from './infrastructure-preflight';

describe('npm start preflight: where PostgreSQL and NATS are expected', () => {
  it('reads the PostgreSQL server from DATABASE_URL as pg does, a socket directory included', () => {
    expect(postgresEndpoint('postgres://postgres@127.0.0.1:5432/interns')).toEqual({ host: '127.0.0.1', port: 5432 });
    expect(postgresEndpoint('postgresql://u@db.internal/interns')).toEqual({ host: 'db.internal', port: 5432 });
    expect(postgresEndpoint('postgres://u@[::1]:6543/x')).toEqual({ host: '::1', port: 6543 });
    expect(postgresEndpoint('postgres://postgres@/interns?host=/var/run/postgresql')).toEqual({ path: '/var/run/postgresql/.s.PGSQL.5432' });
  });

  it('reads every NATS server of NATS_URL, with or without a scheme', () => {
    expect(natsEndpoints('nats://127.0.0.1:4222')).toEqual([{ host: '127.0.0.1', port: 4222 }]);
    expect(natsEndpoints('nats://user:secret@nats.internal, 10.0.0.2:5222')).toEqual([
      { host: 'nats.internal', port: 4222 },
      { host: '10.0.0.2', port: 5222 },
    ]);
  });

  it('names an endpoint as host:port or socket path', () => {
    expect(describeEndpoint({ host: '127.0.0.1', port: 5432 })).toBe('127.0.0.1:5432');
    expect(describeEndpoint({ host: '::1', port: 4222 })).toBe('[::1]:4222');
    expect(describeEndpoint({ path: '/run/postgresql/.s.PGSQL.5432' })).toBe('/run/postgresql/.s.PGSQL.5432');
  });
});
