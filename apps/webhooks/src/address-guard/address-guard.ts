import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/** Every address a host name resolves to (IPv4 or IPv6 text). Injectable: tests map names to chosen addresses. */
export type HostResolver = (hostname: string) => Promise<string[]>;

/** The system resolver (hosts file, then DNS), as a connection made without a pinned address would use. */
export const systemResolver: HostResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
};

/** A URL the service may call, and the one address it was checked at: the connection goes there and nowhere else. */
export interface CheckedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/** A URL the service refuses to call; the message says why (it is shown to the caller, or in the deliveries log). */
export class UnsafeTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeTargetError';
  }
}

/**
 * Cloud metadata services. Both are in refused classes already (link-local, unique local); named here so a
 * change of the class rules cannot let them through.
 */
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254']);

/** IPv6 global unicast (RFC 4291): whatever ipaddr.js classes as unicast outside it is not routed on the internet. */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/** How long a name may take to resolve before the URL is refused (a slow resolver must not hold a delivery slot). */
export const RESOLVE_TIMEOUT_MS = 5_000;

/**
 * Only globally routable unicast is allowed. Everything ipaddr.js classes otherwise is refused: loopback,
 * private, linkLocal, uniqueLocal, unspecified, carrierGradeNat, reserved, multicast, broadcast, benchmarking,
 * and the IPv6 forms that embed an IPv4 address another hop would translate (6to4, teredo, NAT64 rfc6052,
 * rfc6145). IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is judged as the IPv4 address it maps. Other IPv6 must also lie in
 * 2000::/3, the only block assigned for global unicast (ipaddr.js calls, say, `4000::1` unicast too).
 */
export function addressClassOf(address: string): { allowed: boolean; range: string } {
  const parsed = ipaddr.process(address);
  const normalized = parsed.toNormalizedString();
  if (METADATA_ADDRESSES.has(address) || METADATA_ADDRESSES.has(normalized) || METADATA_ADDRESSES.has(parsed.toString())) {
    return { allowed: false, range: 'metadata' };
  }
  const range = parsed.range();
  if (range === 'unicast' && parsed.kind() === 'ipv6' && !parsed.match(IPV6_GLOBAL_UNICAST)) {
    return { allowed: false, range: 'not global unicast' };
  }
  return { allowed: range === 'unicast', range };
}

/**
 * SSRF guard of webhook URLs (CONTRACT section 13): `https://` only, and every address the host resolves to
 * must be public. Applied when an endpoint is created and again before every delivery attempt; the attempt
 * then connects to the address checked here (see pinnedLookup), so a DNS answer that changes between the check
 * and the connection (rebinding) cannot send it elsewhere. With `allowInsecure` (development and tests) any
 * scheme of http(s) and any address pass, but the name is still resolved once and pinned. Refusals name the
 * class of address, never the address: a caller must not learn what the service's resolver answers for a name.
 */
export class AddressGuard {
  constructor(
    private readonly resolve: HostResolver,
    private readonly allowInsecure: boolean,
    private readonly resolveTimeoutMs = RESOLVE_TIMEOUT_MS,
  ) {}

  async check(rawUrl: string): Promise<CheckedTarget> {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw new UnsafeTargetError('url is not an absolute URL');
    }
    if (url.protocol !== 'https:' && !(this.allowInsecure && url.protocol === 'http:')) {
      throw new UnsafeTargetError('url must use https');
    }
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const addresses = await this.addressesOf(hostname);
    if (addresses.length === 0) throw new UnsafeTargetError(`url's host ${hostname} resolves to no address`);
    if (!this.allowInsecure) {
      for (const address of addresses) {
        const { allowed, range } = addressClassOf(address);
        if (!allowed) throw new UnsafeTargetError(`url's host resolves to a ${range} address, which webhooks may not call`);
      }
    }
    const address = addresses[0];
    return { url, address, family: ipaddr.parse(address).kind() === 'ipv6' ? 6 : 4 };
  }

  private async addressesOf(hostname: string): Promise<string[]> {
    if (ipaddr.isValid(hostname)) return [hostname];
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new UnsafeTargetError(`url's host ${hostname} did not resolve within ${this.resolveTimeoutMs / 1000}s`)),
        this.resolveTimeoutMs,
      );
    });
    try {
      const addresses = await Promise.race([this.resolve(hostname), timeout]);
      return addresses.filter((address) => ipaddr.isValid(address));
    } catch (error) {
      if (error instanceof UnsafeTargetError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      throw new UnsafeTargetError(`url's host ${hostname} does not resolve${code ? ` (${code})` : ''}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void;

/**
 * A `lookup` for `net.connect` / `tls.connect` that answers every name with the checked address: the socket
 * goes where the guard looked, never to a second DNS answer. (Node asks with `all: true` when it may race
 * address families.)
 */
export function pinnedLookup(target: CheckedTarget) {
  return (_hostname: string, options: { all?: boolean } | number | undefined, callback: LookupCallback): void => {
    if (typeof options === 'object' && options?.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}
