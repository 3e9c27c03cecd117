import { DomainError } from './errors';
import { EGRESS_ENTRY_PATTERN, egressAllows, parseEgressPolicy } from './egress';

function refusal(body: unknown): string {
  try {
    parseEgressPolicy(body);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).reason).toBe('invalid_body');
    return (error as DomainError).message;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

describe('parseEgressPolicy', () => {
  it('takes an empty list', () => {
    expect(parseEgressPolicy({ allow: [] })).toEqual({ allow: [] });
  });

  it('lowercases, drops the trailing dot, collapses duplicates and keeps the first occurrence order', () => {
    const body = { allow: ['API.GitHub.com.', '*.Example.ORG.', 'pypi.org', 'api.github.com', '*.example.org', 'localhost'] };
    expect(parseEgressPolicy(body)).toEqual({ allow: ['api.github.com', '*.example.org', 'pypi.org', 'localhost'] });
  });

  it('takes 100 entries and counts them as sent', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => `h${i}.example.com`);
    expect(parseEgressPolicy({ allow: hundred }).allow).toHaveLength(100);
    expect(refusal({ allow: [...hundred, 'h0.example.com'] })).toBe('allow: allow must hold at most 100 entries');
  });

  it('takes labels of 63 characters and names of 253', () => {
    const label = 'a'.repeat(63);
    const longest = `${label}.${label}.${label}.${'b'.repeat(61)}`;
    expect(longest).toHaveLength(253);
    expect(parseEgressPolicy({ allow: [longest, `*.${label}.com`] }).allow).toEqual([longest, `*.${label}.com`]);
  });

  it.each([
    ['an empty entry', '', 'is empty'],
    ['a scheme', 'https://api.github.com', 'has a scheme'],
    ['a path', 'api.github.com/repos', 'has a path'],
    ['a port', 'api.github.com:443', 'has a port'],
    ['a bare *', '*', 'is a bare *'],
    ['a * inside a label', 'api*.github.com', 'has a * other than as the first label'],
    ['a * after the first label', 'api.*.github.com', 'has a * other than as the first label'],
    ['two wildcard labels', '*.*.github.com', 'has a * other than as the first label'],
    ['a wildcard over a top-level domain', '*.com', 'opens a whole top-level domain'],
    ['a wildcard without a domain', '*.', 'is not a hostname'],
    ['an IPv4 address', '10.0.0.1', 'is an IP address'],
    ['an IPv4 address in short form', '127.1', 'is an IP address'],
    ['an IPv4 address in hex', '0x7f000001', 'is an IP address'],
    ['a wildcard over addresses', '*.0.0.10', 'is an IP address'],
    ['an IPv6 address', '::1', 'is an IP address'],
    ['a bracketed IPv6 address', '[2001:db8::1]', 'is an IP address'],
    ['a label of 64 characters', `${'a'.repeat(64)}.com`, 'is not a hostname'],
    ['a name of 254 characters', `${'a'.repeat(63)}.${'a'.repeat(63)}.${'a'.repeat(63)}.${'b'.repeat(62)}`, 'is not a hostname'],
    ['a hyphen at the start of a label', '-api.github.com', 'is not a hostname'],
    ['a hyphen at the end of a label', 'api-.github.com', 'is not a hostname'],
    ['an underscore', 'api_v2.github.com', 'is not a hostname'],
    ['an empty label', 'api..github.com', 'is not a hostname'],
    ['a leading dot', '.github.com', 'is not a hostname'],
    ['a space', ' github.com', 'is not a hostname'],
    ['a name that is not ASCII', 'bücher.de', 'is not a hostname'],
  ])('refuses %s, naming the rule', (_case, entry, rule) => {
    expect(refusal({ allow: ['ok.example.com', entry] }).startsWith(`allow.1: ${JSON.stringify(entry)} ${rule}`)).toBe(true);
  });

  it.each([
    ['a body that is not an object', [], 'body must be a JSON object'],
    ['no allow', {}, 'allow: allow must be a list of hostnames and *.<domain> entries'],
    ['allow that is not a list', { allow: 'api.github.com' }, 'allow: allow must be a list of hostnames and *.<domain> entries'],
    ['an entry that is not a string', { allow: [1] }, 'allow.0: each entry must be a string'],
    ['an unknown field', { allow: [], deny: [] }, 'unknown field: deny'],
  ])('refuses %s', (_case, body, message) => {
    expect(refusal(body)).toBe(message);
  });

  it('stores entries the OpenAPI pattern describes', () => {
    for (const entry of parseEgressPolicy({ allow: ['API.example.com.', '*.example.com', 'localhost'] }).allow) {
      expect(EGRESS_ENTRY_PATTERN.test(entry)).toBe(true);
    }
  });
});

describe('egressAllows', () => {
  const allow = ['api.github.com', '*.example.org'];

  it('allows a host named exactly, whatever its case or trailing dot', () => {
    expect(egressAllows(allow, 'api.github.com')).toBe(true);
    expect(egressAllows(allow, 'API.GitHub.com.')).toBe(true);
  });

  it('allows no other host of an exact entry: not its parent, a subdomain or a name that only ends alike', () => {
    expect(egressAllows(allow, 'github.com')).toBe(false);
    expect(egressAllows(allow, 'uploads.api.github.com')).toBe(false);
    expect(egressAllows(allow, 'evilapi.github.com')).toBe(false);
    expect(egressAllows(allow, 'api.github.com.evil.net')).toBe(false);
  });

  it('allows every subdomain of a wildcard at any depth, never the domain itself', () => {
    expect(egressAllows(allow, 'www.example.org')).toBe(true);
    expect(egressAllows(allow, 'a.b.c.example.org')).toBe(true);
    expect(egressAllows(allow, 'WWW.Example.Org.')).toBe(true);
    expect(egressAllows(allow, 'example.org')).toBe(false);
    expect(egressAllows(allow, 'badexample.org')).toBe(false);
    expect(egressAllows(allow, 'example.org.evil.net')).toBe(false);
  });

  it('allows nothing under an empty policy', () => {
    expect(egressAllows([], 'api.github.com')).toBe(false);
  });

  it('never allows an IP literal or a name that is not a hostname', () => {
    const permissive = ['*.example.org', '1.2.3.4', '*.3.4'];
    for (const host of ['1.2.3.4', '2.3.4', '::1', '[::1]', '', '.', '*.example.org', 'a..example.org', 'x.example.org:443']) {
      expect({ host, allowed: egressAllows(permissive, host) }).toEqual({ host, allowed: false });
    }
  });
});
