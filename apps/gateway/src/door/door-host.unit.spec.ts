import { DoorHosts } from './door-host';

describe('DoorHosts', () => {
  const hosts = new DoorHosts('interns.localhost');

  it('claims every name under INTERN_DOMAIN, normalized: port, case and the root dot do not matter', () => {
    expect(hosts.hostnameOf('ada-0123abcd.interns.localhost')).toBe('ada-0123abcd.interns.localhost');
    expect(hosts.hostnameOf('ada-0123abcd.interns.localhost:8080')).toBe('ada-0123abcd.interns.localhost');
    expect(hosts.hostnameOf('ADA-0123ABCD.Interns.Localhost')).toBe('ada-0123abcd.interns.localhost');
    expect(hosts.hostnameOf('ada-0123abcd.interns.localhost.:443')).toBe('ada-0123abcd.interns.localhost');
    // Deeper names are under the domain too (and name no intern: the directory says 404).
    expect(hosts.hostnameOf('a.b.interns.localhost')).toBe('a.b.interns.localhost');
  });

  it('leaves every other host to the API: the public host, regional hosts, the domain itself, look-alikes', () => {
    for (const host of [
      undefined,
      'localhost',
      'localhost:8080',
      'eu.localhost',
      'interns.localhost',
      'interns.localhost:8080',
      'ada-0123abcd.interns.localhost.evil.example',
      'ada-0123abcdinterns.localhost',
      '127.0.0.1:8080',
      '[::1]:8080',
    ]) {
      expect({ host, door: hosts.hostnameOf(host) }).toEqual({ host, door: null });
    }
  });

  it('constrains door routes to the same hosts, on the raw header', () => {
    for (const host of ['ada-0123abcd.interns.localhost', 'ADA-0123abcd.interns.localhost:8080', 'ada-0123abcd.interns.localhost.']) {
      expect({ host, matches: hosts.constraint.test(host) }).toEqual({ host, matches: true });
    }
    for (const host of ['localhost:8080', 'interns.localhost', 'x.interns.localhost.evil.example', 'xinterns.localhost', '[::1]:80']) {
      expect({ host, matches: hosts.constraint.test(host) }).toEqual({ host, matches: false });
    }
  });

  it('takes INTERN_DOMAIN as DNS does (case, root dot) and escapes it in the constraint', () => {
    const odd = new DoorHosts('Interns.Example.');
    expect(odd.hostnameOf('a-0123abcd.interns.example')).toBe('a-0123abcd.interns.example');
    expect(odd.constraint.test('a-0123abcd.internsXexample')).toBe(false);
  });
});
