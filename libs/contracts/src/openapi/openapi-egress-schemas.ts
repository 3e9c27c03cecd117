/**
 * `components.schemas` of an intern's egress (interface section 19): the policy as answered, the put's body (from the
 * zod schema the gateway parses it with), and the egress log, an entry per request the proxy handled.
 */
import { EGRESS_ENTRY_PATTERN, EGRESS_MAX_ENTRIES, egressPolicySchema } from '../egress';
import { VAULT_MAX_NAME_CHARS, VAULT_NAME_PATTERN } from '../vault';
import { JsonSchema, listPage, nullable, ref, requestSchemaOf, strictObject, TIMESTAMP, UUID_SCHEMA } from './json-schema';

const BYTE_COUNT: JsonSchema = { type: 'integer', minimum: 0 };

/** The thirteen keys of an egress log entry, in the order of interface section 19. */
const EGRESS_LOG_ENTRY_PROPERTIES: Record<string, JsonSchema> = {
  id: UUID_SCHEMA,
  at: { ...TIMESTAMP, description: 'When the request reached the proxy.' },
  run_id: { ...nullable(UUID_SCHEMA), description: 'The run whose command made the request; `null` for a command of no run.' },
  host: { type: 'string', description: 'The host the request asked for, as the proxy judged it.' },
  port: { type: 'integer', minimum: 0, maximum: 65535 },
  method: { ...nullable({ type: 'string', minLength: 1 }), description: 'Only where the proxy saw HTTP (plain HTTP, or TLS it terminated); else `null`.' },
  path: { ...nullable({ type: 'string' }), description: 'Without the query; only where the proxy saw HTTP, else `null`.' },
  decision: { type: 'string', enum: ['allowed', 'denied'] },
  reason: { ...nullable({ type: 'string' }), description: 'Why it was refused or failed (the text the client got); `null` otherwise.' },
  secrets: {
    type: 'array',
    items: { type: 'string', minLength: 1, maxLength: VAULT_MAX_NAME_CHARS, pattern: VAULT_NAME_PATTERN.source },
    description: 'The secrets whose placeholders the request carried: released when allowed, the refused one when denied.',
  },
  status: { ...nullable({ type: 'integer', minimum: 100, maximum: 999 }), description: "The origin's status, where the proxy saw HTTP; else `null`." },
  bytes_out: { ...BYTE_COUNT, description: "Towards the origin: a tunnel's raw bytes, or the HTTP request's head and body." },
  bytes_in: { ...BYTE_COUNT, description: 'Back from the origin, counted the same way.' },
};

export const EGRESS_SCHEMAS: Record<string, JsonSchema> = {
  EgressPolicy: {
    ...strictObject({
      allow: {
        type: 'array',
        maxItems: EGRESS_MAX_ENTRIES,
        uniqueItems: true,
        items: { type: 'string', pattern: EGRESS_ENTRY_PATTERN.source },
      },
    }),
    description:
      '`allow`: the hosts the intern\'s requests may reach besides those its usable secrets are bound to, normalized, in the ' +
      'order given: an exact hostname, or `*.<domain>` for every subdomain of `<domain>` at any depth (never `<domain>` ' +
      'itself). A new intern\'s is empty.',
  },
  EgressPolicyWrite: {
    ...requestSchemaOf(egressPolicySchema),
    description:
      `\`allow\`: 0-${EGRESS_MAX_ENTRIES} entries as sent, each a hostname or \`*.<domain>\` with a domain of two labels or ` +
      'more; lowercased, a trailing dot removed, duplicates collapsed to the first. A scheme, port, path, a bare `*` or `*` ' +
      'anywhere else, an IP address, an empty entry or a name that breaks the DNS label rules: 400 naming the rule. ' +
      'Replaces the whole list.',
  },
  EgressLogEntry: strictObject(EGRESS_LOG_ENTRY_PROPERTIES),
  EgressLogPage: listPage(ref('EgressLogEntry'), 'Newest first: the order the proxy recorded the entries in, latest first.'),
};
