/**
 * Secret release (interface section 19): in the sandbox a usable secret is an env var holding its placeholder
 * `vault:<name>:<random>`; the proxy puts the value in place of the placeholder in the request's header values,
 * and only for a host the secret is bound to. Bodies, URLs and queries are never touched: a value must not
 * end up somewhere a server echoes or stores (a query string lands in access logs, a body in a database).
 */

/** A secret the intern may use: its name, the exact hosts it is released to, and its placeholder in the sandbox. */
export interface EgressSecretBinding {
  name: string;
  hosts: readonly string[];
  placeholder: string;
}

/** What the headers of one request carry, for one host. */
export interface PlaceholderScan {
  /** Secrets whose placeholder appears in a header value and that are bound to the host. */
  releasable: EgressSecretBinding[];
  /** Secrets whose placeholder appears in a header value but that are not bound to the host. */
  unreleasable: EgressSecretBinding[];
}

/** Which secrets' placeholders occur in the header values of `rawHeaders` (name, value, name, value...). */
export function scanPlaceholders(rawHeaders: readonly string[], secrets: readonly EgressSecretBinding[], host: string): PlaceholderScan {
  const scan: PlaceholderScan = { releasable: [], unreleasable: [] };
  for (const secret of secrets) {
    // An empty placeholder would "occur" everywhere; the service never hands one out, so it is ignored.
    if (secret.placeholder === '') continue;
    let found = false;
    for (let i = 1; i < rawHeaders.length && !found; i += 2) found = rawHeaders[i].includes(secret.placeholder);
    if (found) (secret.hosts.includes(host) ? scan.releasable : scan.unreleasable).push(secret);
  }
  return scan;
}

/** `rawHeaders` with every occurrence of each secret's placeholder in a header value replaced by its value. */
export function substitutePlaceholders(rawHeaders: readonly string[], values: ReadonlyMap<string, string>): string[] {
  return rawHeaders.map((item, index) => {
    if (index % 2 === 0) return item;
    let value = item;
    for (const [placeholder, secret] of values) value = value.replaceAll(placeholder, () => secret);
    return value;
  });
}
