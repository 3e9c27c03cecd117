/** `<name>-<first 8 hex of id>.<INTERN_DOMAIN>` (CONTRACT section 5). */
export function internHostname(name: string, internId: string, internDomain: string): string {
  return `${name}-${internId.replace(/-/g, '').slice(0, 8).toLowerCase()}.${internDomain}`;
}
