import { internOriginOf, loadConfig } from './config';

describe('INTERN_ORIGIN', () => {
  it('defaults to https://{hostname}, and an intern origin replaces every {hostname}', () => {
    const config = loadConfig({});
    expect(config.internOrigin).toBe('https://{hostname}');
    expect(internOriginOf(config.internOrigin, 'ada-0123abcd.interns.localhost')).toBe('https://ada-0123abcd.interns.localhost');
    expect(internOriginOf('http://{hostname}:8080', 'ada-0123abcd.interns.localhost')).toBe('http://ada-0123abcd.interns.localhost:8080');
  });

  it('accepts an http(s) origin holding {hostname}', () => {
    for (const origin of ['http://{hostname}:8080', 'https://{hostname}', 'https://{hostname}.edge.example:8443']) {
      expect(loadConfig({ INTERN_ORIGIN: origin }).internOrigin).toBe(origin);
    }
  });

  it('refuses an origin without {hostname}, with a path, of another scheme, or with a default port written out', () => {
    for (const origin of ['https://interns.example', 'https://{hostname}/door', 'ftp://{hostname}', '{hostname}', 'https://{hostname}:443']) {
      expect(() => loadConfig({ INTERN_ORIGIN: origin })).toThrow(/INTERN_ORIGIN must be an http\(s\) origin holding \{hostname\}/);
    }
  });
});
