/**
 * `components.schemas` of an intern's egress policy (interface section 19): the policy as answered, and the put's
 * body (from the zod schema the gateway parses it with).
 */
import { EGRESS_ENTRY_PATTERN, EGRESS_MAX_ENTRIES, egressPolicySchema } from '../egress';
import { JsonSchema, requestSchemaOf, strictObject } from './json-schema';

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
};
