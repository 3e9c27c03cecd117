/**
 * The operations of an intern's egress policy (interface section 19), relative to `API_BASE_PATH`. Intern routes: any
 * credential that sees the intern reads it; the put is a lifecycle write and is closed to intern keys (403), since
 * an intern must not widen its own egress.
 */
import { ref } from './json-schema';
import { API_KEY, BODY_RULES, INTERN_ACCESS, jsonBody, OAUTH_TOKEN, OpenApiPathItem, parameterRef, SecurityRequirement, SERVICE_FAILURES } from './openapi-operation';
import { errorResponses, jsonResponse } from './openapi-responses';

/** The put: every intern-route credential but an intern key. */
const EGRESS_WRITE_SECURITY: SecurityRequirement[] = [{ [API_KEY]: ['user', 'organization'] }, { [OAUTH_TOKEN]: ['interns'] }];

export const egressPolicy: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'getEgressPolicy',
    tags: ['Egress'],
    summary: "The intern's egress policy",
    description: 'Any credential that can see the intern, its own intern key included. A new intern\'s policy is `{"allow":[]}`.',
    responses: {
      '200': jsonResponse('The policy.', ref('EgressPolicy')),
      ...errorResponses([...INTERN_ACCESS, ...SERVICE_FAILURES]),
    },
  },
  put: {
    operationId: 'putEgressPolicy',
    tags: ['Egress'],
    summary: "Replace the intern's egress policy",
    description:
      'The whole list, normalized, answered as stored; the same list again changes nothing and answers the same. An intern ' +
      'key: 403 `forbidden` (an intern must not widen its own egress). Refused while the intern is being torn down (409).',
    security: EGRESS_WRITE_SECURITY,
    requestBody: jsonBody('EgressPolicyWrite'),
    responses: {
      '200': jsonResponse('The policy as stored.', ref('EgressPolicy')),
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'intern_busy', ...SERVICE_FAILURES]),
    },
  },
};
