import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { databaseNameOf, scramSha256Verifier, serviceDatabaseUrl, serviceRoleName } from './database-roles';

describe('service role names and URLs', () => {
  it('names a role after its database and service', () => {
    expect(serviceRoleName('interns', 'runs')).toBe('interns_runs');
    expect(serviceRoleName('interns_test_0123456789ab', 'analytics')).toBe('interns_test_0123456789ab_analytics');
  });

  it('refuses a database name that would make a role name PostgreSQL cuts short, or one it would have to quote', () => {
    expect(() => serviceRoleName('d'.repeat(54), 'analytics')).toThrow(/too long for its service roles/);
    expect(serviceRoleName('d'.repeat(53), 'analytics')).toHaveLength(63);
    expect(() => serviceRoleName('in-terns', 'runs')).toThrow('unsupported database name "in-terns": letters, digits and _ only');
    expect(() => databaseNameOf('postgres://h/in%20terns')).toThrow('unsupported database name "in terns"');
  });

  it("puts the service's role (and its password, encoded) in the owner's URL, keeping host, database and options", () => {
    const owner = 'postgres://owner:owner-pw@db.example.com:6432/interns?sslmode=require';
    expect(serviceDatabaseUrl(owner, 'gateway')).toBe('postgres://interns_gateway@db.example.com:6432/interns?sslmode=require');
    const withPassword = new URL(serviceDatabaseUrl(owner, 'runs', 'p@ss:w/rd'));
    expect({ user: withPassword.username, password: decodeURIComponent(withPassword.password), host: withPassword.host }).toEqual({
      user: 'interns_runs',
      password: 'p@ss:w/rd',
      host: 'db.example.com:6432',
    });
  });
});

describe('scramSha256Verifier', () => {
  it("is PostgreSQL's stored SCRAM-SHA-256 form, whose keys derive from the password (RFC 5802)", () => {
    const salt = Buffer.from('0123456789abcdef');
    const verifier = scramSha256Verifier('pencil', salt, 4096);
    const salted = pbkdf2Sync('pencil', salt, 4096, 32, 'sha256');
    const storedKey = createHash('sha256').update(createHmac('sha256', salted).update('Client Key').digest()).digest('base64');
    const serverKey = createHmac('sha256', salted).update('Server Key').digest('base64');
    expect(verifier).toBe(`SCRAM-SHA-256$4096:${salt.toString('base64')}$${storedKey}:${serverKey}`);
    expect(verifier).not.toContain('pencil');
  });

  it('salts each verifier afresh', () => {
    expect(scramSha256Verifier('pencil')).not.toBe(scramSha256Verifier('pencil'));
  });
});
