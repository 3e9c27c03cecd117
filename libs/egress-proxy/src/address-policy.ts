/**
 * Which addresses the egress proxy connects to (interface section 19). Whatever an intern's policy says, only
 * globally routable unicast is reached: never loopback, private, link-local, shared (100.64/10), multicast,
 * cloud metadata, unspecified or reserved addresses, nor the platform's own. EGRESS_ALLOW_PRIVATE=true
 * (development and tests) lifts the class rules, but the platform's own listening address:port pairs (its
 * database, NATS, every service port) stay refused even then.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';

/** Every address a host name resolves to (IPv4 or IPv6 text). Injectable: tests map names to chosen addresses. */
export type HostResolver = (hostname: string) => Promise<string[]>;

/** The system resolver (hosts file, then DNS). */
export const systemResolver: HostResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
};

/**
 * `base`, except that the names in `overrides` (EGRESS_RESOLVE, like curl's --resolve) resolve to the addresses
 * given there; IP literals resolve to themselves without asking anyone.
 */
export function resolverWith(overrides: ReadonlyMap<string, readonly string[]>, base: HostResolver = systemResolver): HostResolver {
  return async (hostname) => {
    if (isIP(hostname) !== 0) return [hostname];
    const pinned = overrides.get(hostname);
    return pinned !== undefined ? [...pinned] : base(hostname);
  };
}

/** Why an address class is refused, as the refusal names it. */
export type AddressClass = 'loopback' | 'private' | 'link-local' | 'shared' | 'multicast' | 'metadata' | 'unspecified' | 'reserved';

/**
 * Cloud metadata services (AWS/GCP/Azure/OpenStack, AWS ECS task metadata, AWS IPv6, Alibaba). Each lies in a
 * refused class already; named so that a change of the class rules cannot let them through.
 */
const METADATA_ADDRESSES = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254']);

/** IPv6 global unicast (RFC 4291); ipaddr.js calls, say, `4000::1` unicast too, but nothing routes it. */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/** ipaddr.js range names that have a class of their own in refusals; every other non-unicast range is reserved. */
const RANGE_CLASSES: Record<string, AddressClass> = {
  loopback: 'loopback',
  private: 'private',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
  linkLocal: 'link-local',
  carrierGradeNat: 'shared',
  multicast: 'multicast',
  broadcast: 'reserved',
  unspecified: 'unspecified',
};

/** The same address whatever its spelling: IPv4-mapped IPv6 (`::ffff:10.0.0.1`) as the IPv4 it maps. */
export function canonicalAddress(address: string): string {
  return ipaddr.process(address).toString();
}

/**
 * The class an address is refused for, or null when it is globally routable unicast. IPv6 forms that embed an
 * IPv4 address another hop would translate (6to4, Teredo, NAT64) are reserved: they could lead to a refused
 * IPv4 address.
 */
export function addressClassOf(address: string): AddressClass | null {
  const parsed = ipaddr.process(address);
  if (METADATA_ADDRESSES.has(parsed.toString())) return 'metadata';
  const range = parsed.range();
  if (range === 'unicast') {
    return parsed.kind() === 'ipv6' && !parsed.match(IPV6_GLOBAL_UNICAST) ? 'reserved' : null;
  }
  return RANGE_CLASSES[range] ?? 'reserved';
}

/** An address and port the platform itself listens on (PostgreSQL, NATS, a service); `0.0.0.0`/`::`: every address. */
export interface PlatformEndpoint {
  address: string;
  port: number;
}

export interface AddressPolicySettings {
  /** EGRESS_ALLOW_PRIVATE=true: the class rules are lifted (development and tests only). */
  allowPrivate: boolean;
  /** The platform's own listening endpoints, refused even with allowPrivate. */
  platformEndpoints: readonly PlatformEndpoint[];
  /** This machine's own addresses, which a wildcard endpoint listens on; the network interfaces' by default. */
  localAddresses?: readonly string[];
}

function machineAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .map((entry) => canonicalAddress(entry.address.replace(/%.*$/, '')));
}

/** Whether an address connects to this machine (then a wildcard listener of the platform answers it). */
function isLocal(address: string, localAddresses: ReadonlySet<string>): boolean {
  return localAddresses.has(address) || addressClassOf(address) === 'loopback' || addressClassOf(address) === 'unspecified';
}

/** Decides, for one address and port, whether the proxy may connect there; the refusal names the class, never the address. */
export class AddressPolicy {
  private readonly endpoints: Array<{ address: string; port: number; wildcard: boolean }>;
  private readonly localAddresses: ReadonlySet<string>;

  constructor(private readonly settings: AddressPolicySettings) {
    this.endpoints = settings.platformEndpoints.map(({ address, port }) => {
      if (isIP(address) === 0) throw new Error(`platform endpoint ${address}:${port} must name an IP address`);
      const canonical = canonicalAddress(address);
      return { address: canonical, port, wildcard: addressClassOf(canonical) === 'unspecified' };
    });
    this.localAddresses = new Set(settings.localAddresses?.map(canonicalAddress) ?? machineAddresses());
  }

  /** Why the proxy must not connect to `address`:`port` (the words after "resolves to"), or null when it may. */
  refusal(address: string, port: number): string | null {
    const canonical = canonicalAddress(address);
    if (this.isPlatformEndpoint(canonical, port)) return 'an address of the platform itself';
    if (this.settings.allowPrivate) return null;
    if (this.endpoints.some((endpoint) => !endpoint.wildcard && endpoint.address === canonical)) return 'an address of the platform itself';
    const addressClass = addressClassOf(canonical);
    return addressClass === null ? null : `${addressClass === 'unspecified' ? 'an' : 'a'} ${addressClass} address`;
  }

  private isPlatformEndpoint(address: string, port: number): boolean {
    return this.endpoints.some(
      (endpoint) =>
        endpoint.port === port && (endpoint.address === address || (endpoint.wildcard && isLocal(address, this.localAddresses))),
    );
  }
}
