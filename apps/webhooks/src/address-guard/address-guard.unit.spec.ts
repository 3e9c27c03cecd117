import { AddressGuard, addressClassOf, type HostResolver, pinnedLookup, UnsafeTargetError } from './address-guard';

/** A resolver that knows only the names it is given: no test here reaches DNS. */
function fakeResolver(names: Record<string, string[]>): HostResolver {
  return async (hostname) => {
    const addresses = names[hostname];
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses;
  };
}

const resolver = fakeResolver({
  'hooks.example.com': ['93.184.216.34'],
  'internal.example.com': ['10.0.0.1'],
  'mixed.example.com': ['93.184.216.34', '192.168.1.10'],
  'v6.example.com': ['2606:2800:220:1:248:1893:25c8:1946'],
  'mapped.example.com': ['::ffff:10.0.0.1'],
  'nothing.example.com': [],
});

describe('addressClassOf', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.10.1', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['64:ff9b::a00:1', 'rfc6052'],
    ['2002:a00:1::', '6to4'],
    ['4000::1', 'not global unicast'],
    ['100::1', 'discard'],
  ])('refuses %s (%s)', (address, range) => {
    expect(addressClassOf(address)).toEqual({ allowed: false, range });
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:2800:220:1:248:1893:25c8:1946'])('allows the public address %s', (address) => {
    expect(addressClassOf(address)).toEqual({ allowed: true, range: 'unicast' });
  });
});

describe('AddressGuard', () => {
  const guard = new AddressGuard(resolver, false);

  it('accepts an https URL whose every address is public, pinned to the address it checked', async () => {
    await expect(guard.check('https://hooks.example.com/in')).resolves.toMatchObject({ address: '93.184.216.34', family: 4 });
    await expect(guard.check('https://v6.example.com/in')).resolves.toMatchObject({ family: 6 });
  });

  it.each([
    ['http://hooks.example.com/in', /https/],
    ['http://127.0.0.1/', /https/],
    ['http://169.254.169.254/latest/meta-data', /https/],
    ['https://127.0.0.1/', /loopback address, which/],
    ['https://169.254.169.254/latest/meta-data', /metadata address/],
    ['https://[::1]:8443/', /loopback/],
    ['https://[fd00:ec2::254]/', /metadata/],
    ['https://2130706433/', /loopback/],
    ['https://internal.example.com/', /private address, which/],
    ['https://mapped.example.com/', /private address/],
    ['https://mixed.example.com/', /private address, which/],
    ['https://unknown.example.com/', /does not resolve \(ENOTFOUND\)/],
    ['https://nothing.example.com/', /resolves to no address/],
    ['ftp://hooks.example.com/', /https/],
  ])('refuses %s', async (url, why) => {
    const refusal = guard.check(url);
    await expect(refusal).rejects.toBeInstanceOf(UnsafeTargetError);
    await expect(refusal).rejects.toThrow(why);
  });

  it('never names the address a name resolved to', async () => {
    for (const url of ['https://internal.example.com/', 'https://mixed.example.com/', 'https://mapped.example.com/']) {
      await expect(guard.check(url)).rejects.toThrow(/^(?!.*(10\.0\.0\.1|192\.168|::ffff)).*$/);
    }
  });

  it('refuses a name that does not resolve in time', async () => {
    const slow = new AddressGuard(() => new Promise(() => undefined), false, 50);
    await expect(slow.check('https://slow.example.com/')).rejects.toThrow("url's host slow.example.com did not resolve within 0.05s");
  });

  it('with WEBHOOK_ALLOW_INSECURE accepts http and any address, still pinning the name to one address', async () => {
    const insecure = new AddressGuard(resolver, true);
    await expect(insecure.check('http://127.0.0.1:9/hook')).resolves.toMatchObject({ address: '127.0.0.1' });
    await expect(insecure.check('http://internal.example.com/')).resolves.toMatchObject({ address: '10.0.0.1' });
    await expect(insecure.check('ftp://internal.example.com/')).rejects.toThrow(/https/);
  });

  it('checks the name again on every call: an answer that turned private (DNS rebinding) is refused', async () => {
    let answer = '93.184.216.34';
    const rebinding = new AddressGuard(async () => [answer], false);
    await expect(rebinding.check('https://rebind.example.com/')).resolves.toMatchObject({ address: '93.184.216.34' });
    answer = '10.0.0.1';
    await expect(rebinding.check('https://rebind.example.com/')).rejects.toThrow(/private/);
  });
});

describe('pinnedLookup', () => {
  it('answers any name with the checked address, in both of the forms net.connect asks for', async () => {
    const lookup = pinnedLookup({ url: new URL('https://hooks.example.com/'), address: '93.184.216.34', family: 4 });
    const single = await new Promise((resolve) => lookup('elsewhere.example', {}, (_error, address, family) => resolve({ address, family })));
    expect(single).toEqual({ address: '93.184.216.34', family: 4 });
    const all = await new Promise((resolve) => lookup('elsewhere.example', { all: true }, (_error, addresses) => resolve(addresses)));
    expect(all).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });
});
