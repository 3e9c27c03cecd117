/**
 * Where a request through the proxy is headed (interface section 19): the CONNECT target or the Host header, and
 * the host as policies compare it (lowercased, no trailing dot, the way the vault stores a secret's hosts). Whether
 * an allow list lets a host through is `egressAllows` in libs/contracts, shared with the policy route's rules.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** A hostname as DNS spells it (underscores included: some real names carry them), at most 253 characters. */
const HOSTNAME_PATTERN = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** Where a request is headed: a hostname or an IP literal (IPv6 without brackets), and a port. */
export interface EgressTarget {
  host: string;
  port: number;
}

/**
 * The host as policies compare it: lowercased, trailing dot removed, IPv6 literals unbracketed and in their
 * shortest form. Null when it is neither a hostname nor an IP literal (a path, a user part, spaces...).
 */
export function normalizeHost(raw: string): string | null {
  let host = raw.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) {
    host = host.slice(1, -1);
    return isIP(host) === 6 ? ipaddr.parse(host).toString() : null;
  }
  if (isIP(host) === 6) return ipaddr.parse(host).toString();
  host = host.replace(/\.$/, '');
  return HOSTNAME_PATTERN.test(host) ? host : null;
}

function parsePort(text: string): number | null {
  if (!/^[0-9]{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : null;
}

/**
 * `host:port` as a CONNECT request names its target (RFC 9110 section 9.3.6: the port is required), IPv6 in
 * brackets (`[2001:db8::1]:443`). Null when malformed.
 */
export function parseConnectTarget(authority: string): EgressTarget | null {
  const match = /^(\[[^\]]+\]|[^:[\]]+):([0-9]+)$/.exec(authority);
  if (match === null) return null;
  const host = normalizeHost(match[1]);
  const port = parsePort(match[2]);
  return host === null || port === null ? null : { host, port };
}

/**
 * A `Host` header's authority: the host, and its port or `defaultPort` when none is given. Null when malformed.
 */
export function parseHostHeader(value: string, defaultPort: number): EgressTarget | null {
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::([0-9]+))?$/.exec(value);
  if (match === null) return null;
  const host = normalizeHost(match[1]);
  const port = match[2] === undefined ? defaultPort : parsePort(match[2]);
  return host === null || port === null ? null : { host, port };
}
