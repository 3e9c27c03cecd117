/**
 * The egress proxy's settings from the environment (interface section 19). The service's config calls these;
 * each throws an Error naming the variable when its value is not usable, so a start fails with that line.
 */
import { isIP } from 'node:net';
import { canonicalAddress } from './address-policy';
import { normalizeHost } from './host-policy';

export const DEFAULT_EGRESS_PORTS: readonly number[] = [443, 80];
/** EGRESS_BYTES_PER_RUN's default: 1 GiB, in and out together. */
export const DEFAULT_EGRESS_BYTES_PER_RUN = 1024 ** 3;
export const DEFAULT_EGRESS_CONNECTIONS_PER_INTERN = 64;

export interface EgressSettings {
  /** EGRESS_PORTS: the ports a request may go to. */
  ports: number[];
  /** EGRESS_RESOLVE: names the proxy resolves to the given addresses instead of asking DNS. */
  resolve: Map<string, string[]>;
  /** EGRESS_ALLOW_PRIVATE=true: private, loopback and other non-public addresses are reachable. */
  allowPrivate: boolean;
  /** EGRESS_BYTES_PER_RUN: bytes in and out one run may move. */
  bytesPerRun: number;
  /** EGRESS_CONNECTIONS_PER_INTERN: connections to the proxy one intern may hold open at once. */
  connectionsPerIntern: number;
}

type Environment = Readonly<Record<string, string | undefined>>;

function isProduction(nodeEnv: string | undefined): boolean {
  return nodeEnv === 'production';
}

/** EGRESS_PORTS: a comma-separated list of ports (1-65535); unset or empty: 443 and 80. */
export function parseEgressPorts(value: string | undefined): number[] {
  if (value === undefined || value.trim() === '') return [...DEFAULT_EGRESS_PORTS];
  const ports = value.split(',').map((item) => item.trim());
  for (const port of ports) {
    if (!/^[0-9]{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
      throw new Error(`EGRESS_PORTS must be a comma-separated list of ports (1-65535), got ${JSON.stringify(port)}`);
    }
  }
  return [...new Set(ports.map(Number))];
}

/**
 * EGRESS_RESOLVE (development and tests, like curl's --resolve): `host:address,...`; a host named twice resolves
 * to every address given for it. IPv6 addresses may be bracketed (`host:[::1]`). Refused with NODE_ENV=production:
 * it sends a name somewhere DNS does not.
 */
export function parseEgressResolve(value: string | undefined, nodeEnv: string | undefined): Map<string, string[]> {
  const resolve = new Map<string, string[]>();
  if (value === undefined || value.trim() === '') return resolve;
  if (isProduction(nodeEnv)) throw new Error('EGRESS_RESOLVE is for development and tests; it is refused with NODE_ENV=production');
  for (const item of value.split(',').map((entry) => entry.trim())) {
    const colon = item.indexOf(':');
    const host = colon > 0 ? normalizeHost(item.slice(0, colon)) : null;
    const address = colon > 0 ? item.slice(colon + 1).replace(/^\[(.*)\]$/, '$1') : '';
    if (host === null || isIP(host) !== 0 || isIP(address) === 0) {
      throw new Error(`EGRESS_RESOLVE must be a comma-separated list of host:address, got ${JSON.stringify(item)}`);
    }
    resolve.set(host, [...(resolve.get(host) ?? []), canonicalAddress(address)]);
  }
  return resolve;
}

/** EGRESS_ALLOW_PRIVATE: `true` or `false` (unset: false); `true` is refused with NODE_ENV=production. */
export function parseEgressAllowPrivate(value: string | undefined, nodeEnv: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'false') return false;
  if (value !== 'true') throw new Error(`EGRESS_ALLOW_PRIVATE must be true or false, got ${JSON.stringify(value)}`);
  if (isProduction(nodeEnv)) {
    throw new Error('EGRESS_ALLOW_PRIVATE=true is for development and tests; it is refused with NODE_ENV=production');
  }
  return true;
}

function parsePositiveInteger(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value.trim() === '') return fallback;
  if (!/^[0-9]+$/.test(value.trim()) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** Every EGRESS_* setting from `env` (NODE_ENV included). */
export function parseEgressSettings(env: Environment): EgressSettings {
  return {
    ports: parseEgressPorts(env.EGRESS_PORTS),
    resolve: parseEgressResolve(env.EGRESS_RESOLVE, env.NODE_ENV),
    allowPrivate: parseEgressAllowPrivate(env.EGRESS_ALLOW_PRIVATE, env.NODE_ENV),
    bytesPerRun: parsePositiveInteger('EGRESS_BYTES_PER_RUN', env.EGRESS_BYTES_PER_RUN, DEFAULT_EGRESS_BYTES_PER_RUN),
    connectionsPerIntern: parsePositiveInteger(
      'EGRESS_CONNECTIONS_PER_INTERN',
      env.EGRESS_CONNECTIONS_PER_INTERN,
      DEFAULT_EGRESS_CONNECTIONS_PER_INTERN,
    ),
  };
}
