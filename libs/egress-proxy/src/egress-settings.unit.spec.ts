import { parseEgressAllowPrivate, parseEgressPorts, parseEgressResolve, parseEgressSettings } from './egress-settings';

describe('egress settings', () => {
  it('defaults: ports 443 and 80, nothing overridden, private refused, 1 GiB per run, 64 connections per intern', () => {
    expect(parseEgressSettings({})).toEqual({
      ports: [443, 80],
      resolve: new Map(),
      allowPrivate: false,
      bytesPerRun: 1073741824,
      connectionsPerIntern: 64,
    });
  });

  it('parses EGRESS_PORTS and refuses anything but ports', () => {
    expect(parseEgressPorts('443, 8443,443')).toEqual([443, 8443]);
    for (const bad of ['0', '65536', 'https', '443,,80']) expect(() => parseEgressPorts(bad)).toThrow(/^EGRESS_PORTS must be/);
  });

  it('parses EGRESS_RESOLVE as host:address pairs (IPv6 bracketed or not), a host named twice getting both', () => {
    expect(parseEgressResolve('API.test:127.0.0.1, api.test:[::1],v6.test:::ffff:127.0.0.2', 'test')).toEqual(
      new Map([
        ['api.test', ['127.0.0.1', '::1']],
        ['v6.test', ['127.0.0.2']],
      ]),
    );
    for (const bad of ['api.test', 'api.test:nowhere', ':127.0.0.1', '10.0.0.1:127.0.0.1']) {
      expect(() => parseEgressResolve(bad, 'test')).toThrow(/^EGRESS_RESOLVE must be/);
    }
  });

  it('refuses EGRESS_ALLOW_PRIVATE=true and EGRESS_RESOLVE with NODE_ENV=production', () => {
    expect(parseEgressAllowPrivate('true', 'development')).toBe(true);
    expect(parseEgressAllowPrivate('false', 'production')).toBe(false);
    expect(() => parseEgressAllowPrivate('yes', 'development')).toThrow('EGRESS_ALLOW_PRIVATE must be true or false, got "yes"');
    expect(() => parseEgressSettings({ NODE_ENV: 'production', EGRESS_ALLOW_PRIVATE: 'true' })).toThrow(/refused with NODE_ENV=production/);
    expect(() => parseEgressSettings({ NODE_ENV: 'production', EGRESS_RESOLVE: 'a.test:127.0.0.1' })).toThrow(/refused with NODE_ENV=production/);
    expect(() => parseEgressSettings({ EGRESS_BYTES_PER_RUN: '-1' })).toThrow('EGRESS_BYTES_PER_RUN must be a positive integer, got "-1"');
    expect(parseEgressSettings({ EGRESS_CONNECTIONS_PER_INTERN: '8' }).connectionsPerIntern).toBe(8);
  });
});
