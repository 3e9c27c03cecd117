/**
 * Check 1 of CONTRACT section 1: `<region>.<PUBLIC_HOST>` (region: a DNS label of 2-12 letters, digits or
 * hyphens; any port ignored) is a regional host, which this API does not serve.
 */
export function regionalHostMatcher(publicHost: string): (hostHeader: string | undefined) => boolean {
  const escaped = withoutPort(publicHost).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`^[A-Za-z0-9-]{2,12}\\.${escaped}$`, 'i');
  return (hostHeader) => hostHeader !== undefined && pattern.test(withoutPort(hostHeader));
}

/** The host of a `Host` header: its port, if any, dropped (an IPv6 literal keeps its brackets). */
export function withoutPort(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end === -1 ? host : host.slice(0, end + 1);
  }
  const colon = host.lastIndexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}
