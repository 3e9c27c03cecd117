import { normalizeHost, parseConnectTarget, parseHostHeader } from './host-policy';

describe('host policy', () => {
  it('normalizes hosts: lowercase, no trailing dot, IPv6 unbracketed and compressed; junk is null', () => {
    expect(normalizeHost('API.Example.COM.')).toBe('api.example.com');
    expect(normalizeHost('[2001:DB8:0:0::1]')).toBe('2001:db8::1');
    expect(normalizeHost('10.0.0.1')).toBe('10.0.0.1');
    for (const junk of ['', 'a b', 'user@host', 'host/path', '[not-v6]', '-bad.com', 'a..b']) expect(normalizeHost(junk)).toBeNull();
  });

  it('parses CONNECT targets host:port, IPv6 in brackets, the port required and in range', () => {
    expect(parseConnectTarget('Example.com:443')).toEqual({ host: 'example.com', port: 443 });
    expect(parseConnectTarget('[::1]:8443')).toEqual({ host: '::1', port: 8443 });
    for (const bad of ['example.com', 'example.com:0', 'example.com:65536', '::1:443', 'example.com:44x', ':443']) {
      expect(parseConnectTarget(bad)).toBeNull();
    }
  });

  it('parses Host headers, the port defaulting to the given one', () => {
    expect(parseHostHeader('example.com', 443)).toEqual({ host: 'example.com', port: 443 });
    expect(parseHostHeader('example.com:8080', 443)).toEqual({ host: 'example.com', port: 8080 });
    expect(parseHostHeader('[::1]', 80)).toEqual({ host: '::1', port: 80 });
    expect(parseHostHeader('a b', 80)).toBeNull();
  });
});
