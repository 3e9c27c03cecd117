import { DeviceFlowError } from './device-flow-error';

/** An issuer URL checked for transport: `insecure` is plain HTTP, allowed only on loopback (local development). */
export interface ParsedIssuer {
  url: URL;
  insecure: boolean;
  /** For messages: the URL as people write it (no lone trailing slash). */
  label: string;
}

/** Loopback host names as URL parses them; no other name, however local it looks, skips TLS. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * Tokens and codes travel to and from the issuer: HTTPS, or HTTP to this machine only. Anything else (another
 * scheme, HTTP to a remote host, a query or fragment, which issuer identifiers may not carry) is refused
 * before any request is made.
 */
export function parseIssuer(issuer: string | URL): ParsedIssuer {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new DeviceFlowError('invalid_issuer', `the issuer ${String(issuer)} is not a URL`);
  }
  if (url.search !== '' || url.hash !== '') {
    throw new DeviceFlowError('invalid_issuer', `the issuer ${url.href} has a query or fragment; an issuer identifier has neither`);
  }
  const label = url.pathname === '/' ? url.origin : url.href;
  if (url.protocol === 'https:') return { url, insecure: false, label };
  if (isLoopbackHttp(url)) return { url, insecure: true, label };
  throw new DeviceFlowError('invalid_issuer', `the issuer ${url.href} must use https (plain http only on localhost, 127.0.0.1 or [::1])`);
}

/**
 * An endpoint or page the issuer names: HTTPS, or loopback HTTP when the issuer itself is loopback HTTP
 * (openid-client's own HTTPS rule is lifted for such an issuer, so this keeps it from reaching further).
 */
export function checkEndpoint(issuer: ParsedIssuer, value: string | undefined, name: string): void {
  if (value === undefined) throw new DeviceFlowError('issuer_error', `the issuer ${issuer.label} names no ${name}`);
  const url = URL.parse(value);
  if (url !== null && (url.protocol === 'https:' || (issuer.insecure && isLoopbackHttp(url)))) return;
  throw new DeviceFlowError('invalid_issuer', `the issuer's ${name} ${JSON.stringify(value)} is not an https URL`);
}
