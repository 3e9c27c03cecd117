/**
 * One hostname rule for every place a client names a host a value or a request may go to: the vault's secret hosts
 * (interface section 18) and the egress policy (section 19).
 */

/** A DNS label: letters, digits and hyphens, not a hyphen at either end, 1-63 characters (lowercase: normalize first). */
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';

/** A hostname as DNS spells it, without anchors: labels joined by dots, at most 253 characters in all. */
export const HOSTNAME_PATTERN_BODY = `(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*`;
export const HOSTNAME_PATTERN = new RegExp(`^${HOSTNAME_PATTERN_BODY}$`);

/** How a hostname is compared: lowercased, its trailing (root) dot removed. */
export function normalizeHostname(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

/** Whether a normalized name is a hostname by the DNS rules above. */
export function isHostname(host: string): boolean {
  return HOSTNAME_PATTERN.test(host);
}

/**
 * Whether a hostname is read as an IPv4 address by URL parsers (the WHATWG URL standard's "ends in a number": the
 * last label is all digits, or `0x` and hex digits), so `10.0.0.1`, `127.1` and `0x7f000001` all are. No top-level
 * domain is numeric, so no real hostname is refused by it.
 */
export function endsInNumber(host: string): boolean {
  const last = host.slice(host.lastIndexOf('.') + 1);
  return /^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/.test(last);
}
