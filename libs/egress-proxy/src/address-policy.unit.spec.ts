import { AddressPolicy, addressClassOf, resolverWith } from './address-policy';

describe('address policy', () => {
  it('classifies every refused range, and passes globally routable unicast', () => {
    const classes: Record<string, ReturnType<typeof addressClassOf>> = {
      '127.0.0.1': 'loopback',
      '::1': 'loopback',
      '::ffff:127.0.0.1': 'loopback',
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '192.168.1.1': 'private',
      'fd12::1': 'private',
      '169.254.1.1': 'link-local',
      'fe80::1': 'link-local',
      '100.64.0.1': 'shared',
      '224.0.0.1': 'multicast',
      'ff02::1': 'multicast',
      '169.254.169.254': 'metadata',
      'fd00:ec2::254': 'metadata',
      '100.100.100.200': 'metadata',
      '0.0.0.0': 'unspecified',
      '::': 'unspecified',
      '240.0.0.1': 'reserved',
      '255.255.255.255': 'reserved',
      '192.0.2.1': 'reserved',
      '64:ff9b::a00:1': 'reserved',
      '2002:a00:1::1': 'reserved',
      '2001:db8::1': 'reserved',
      '4000::1': 'reserved',
      '93.184.215.14': null,
      '2606:4700::6810:84e5': null,
    };
    for (const [address, expected] of Object.entries(classes)) expect({ address, class: addressClassOf(address) }).toEqual({ address, class: expected });
  });

  it("refuses non-public addresses and the platform's own, and with allowPrivate only the platform's own address:port", () => {
    const endpoints = [
      { address: '10.0.0.5', port: 5432 },
      { address: '0.0.0.0', port: 4222 },
    ];
    const strict = new AddressPolicy({ allowPrivate: false, platformEndpoints: endpoints, localAddresses: ['192.0.2.10'] });
    expect(strict.refusal('93.184.215.14', 443)).toBeNull();
    expect(strict.refusal('10.0.0.5', 443)).toBe('an address of the platform itself');
    expect(strict.refusal('10.0.0.6', 443)).toBe('a private address');
    expect(strict.refusal('0.0.0.0', 443)).toBe('an unspecified address');

    const relaxed = new AddressPolicy({ allowPrivate: true, platformEndpoints: endpoints, localAddresses: ['192.0.2.10'] });
    expect(relaxed.refusal('10.0.0.6', 443)).toBeNull();
    expect(relaxed.refusal('10.0.0.5', 443)).toBeNull();
    expect(relaxed.refusal('10.0.0.5', 5432)).toBe('an address of the platform itself');
    expect(relaxed.refusal('::ffff:10.0.0.5', 5432)).toBe('an address of the platform itself');
    // A wildcard listener answers on every address of this machine, loopback included.
    expect(relaxed.refusal('127.0.0.1', 4222)).toBe('an address of the platform itself');
    expect(relaxed.refusal('192.0.2.10', 4222)).toBe('an address of the platform itself');
    expect(relaxed.refusal('10.9.9.9', 4222)).toBeNull();
    expect(() => new AddressPolicy({ allowPrivate: true, platformEndpoints: [{ address: 'postgres', port: 5432 }] })).toThrow(
      'platform endpoint postgres:5432 must name an IP address',
    );
  });

  it('resolves overridden names to their addresses, IP literals to themselves, and asks the base resolver otherwise', async () => {
    const asked: string[] = [];
    const resolve = resolverWith(new Map([['api.test', ['127.0.0.1', '::1']]]), async (name) => (asked.push(name), ['203.0.113.9']));
    expect(await resolve('api.test')).toEqual(['127.0.0.1', '::1']);
    expect(await resolve('10.0.0.1')).toEqual(['10.0.0.1']);
    expect(await resolve('other.test')).toEqual(['203.0.113.9']);
    expect(asked).toEqual(['other.test']);
  });
});
