/**
 * An intern's egress policy (interface section 19): the hosts its requests may reach beyond those its usable secrets
 * are bound to. The rules of a policy entry, the requests the gateway sends lifecycle, and the match the egress
 * proxy decides with.
 */
import { z } from 'zod';
import { endsInNumber, HOSTNAME_PATTERN_BODY, isHostname, normalizeHostname } from './hostname';
import { parseObjectBody } from './object-body';
import type { RequestContext } from './principal';

export const EGRESS_MAX_ENTRIES = 100;
const WILDCARD_PREFIX = '*.';

/** A stored entry: a normalized hostname, or `*.` and a normalized domain of two labels or more (for the OpenAPI document). */
export const EGRESS_ENTRY_PATTERN = new RegExp(`^(?:\\*\\.)?${HOSTNAME_PATTERN_BODY}$`);

/** The resource of `GET` and `PUT /interns/{intern_id}/egress`. A new intern's is `{"allow":[]}`. */
export interface EgressPolicy {
  allow: string[];
}

export interface GetEgressPolicyRequest {
  context: RequestContext;
  internId: string;
}

export interface PutEgressPolicyRequest {
  context: RequestContext;
  internId: string;
  body: EgressPolicy;
}

/**
 * What is wrong with an entry as sent, or null: one rule named per refusal, so a client learns which. IP literals are
 * refused because egress is decided by hostname (a proxy sees the name a client asked for; an address says nothing of
 * whose it is, and one name's addresses change).
 */
function entryProblem(entry: string): string | null {
  if (entry === '') return 'is empty';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) return 'has a scheme; an entry is a hostname or *.<domain>';
  if (entry.includes('/')) return 'has a path; an entry is a hostname or *.<domain>';
  if (entry.startsWith('[') || entry.split(':').length > 2) return 'is an IP address; egress is allowed by hostname only';
  if (entry.includes(':')) return 'has a port; ports are the proxy\'s (443 and 80), not the entry\'s';
  if (entry === '*') return 'is a bare *; allow hosts one by one, or the subdomains of a domain as *.<domain>';
  const wildcard = entry.startsWith(WILDCARD_PREFIX);
  const host = normalizeHostname(wildcard ? entry.slice(WILDCARD_PREFIX.length) : entry);
  if (host.includes('*')) return 'has a * other than as the first label of *.<domain>';
  if (!isHostname(host)) {
    return 'is not a hostname (labels of letters, digits and hyphens, no hyphen at either end, at most 63 characters each and 253 in all)';
  }
  if (endsInNumber(host)) return 'is an IP address; egress is allowed by hostname only';
  if (wildcard && !host.includes('.')) return 'opens a whole top-level domain; *.<domain> needs a domain of at least two labels';
  return null;
}

/** Lowercased, its trailing dot removed (after `*.` too); any broken rule is an issue naming it. */
function normalizeEntry(entry: string, ctx: z.RefinementCtx): string {
  const problem = entryProblem(entry);
  if (problem !== null) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} ${problem}` });
    return z.NEVER;
  }
  return normalizeHostname(entry);
}

export const egressPolicySchema = z.strictObject({
  allow: z
    .array(z.string('each entry must be a string').transform(normalizeEntry), 'allow must be a list of hostnames and *.<domain> entries')
    .max(EGRESS_MAX_ENTRIES, `allow must hold at most ${EGRESS_MAX_ENTRIES} entries`)
    // Duplicates after normalization collapse to their first occurrence; the order is the caller's.
    .transform((allow) => [...new Set(allow)]),
});

/** A PUT body: `{"allow":[...]}`, 0-100 entries as sent, each normalized, duplicates collapsed, order kept. */
export function parseEgressPolicy(value: unknown): EgressPolicy {
  return parseObjectBody(egressPolicySchema, value);
}

/**
 * Whether a policy's entries (as stored: normalized) let a request reach `host`: an entry equal to it, or `*.<domain>`
 * with `host` a subdomain of `<domain>` at any depth (never `<domain>` itself). `host` is compared as a hostname
 * (case and a trailing dot do not matter); an IP literal or anything else that is not a hostname is never allowed.
 * The proxy also lets a request through to the hosts of secrets the intern can use: that is its own check.
 */
export function egressAllows(allow: readonly string[], host: string): boolean {
  const name = normalizeHostname(host);
  if (!isHostname(name) || endsInNumber(name)) return false;
  return allow.some((entry) =>
    entry.startsWith(WILDCARD_PREFIX) ? name.endsWith(entry.slice(WILDCARD_PREFIX.length - 1)) : entry === name,
  );
}
