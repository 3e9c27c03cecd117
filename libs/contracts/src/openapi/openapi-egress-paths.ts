/**
 * The operations of an intern's egress (interface section 19), relative to `API_BASE_PATH`: its policy and its log.
 * Intern routes: any credential that sees the intern reads them; the policy's put is a lifecycle write and is closed to
 * intern keys (403), since an intern must not widen its own egress.
 */
import { EGRESS_LOG_DEFAULT_LIMIT, EGRESS_LOG_MAX_LIMIT } from '../egress-service';
import { ref } from './json-schema';
import {
  API_KEY,
  BODY_RULES,
  INTERN_ACCESS,
  jsonBody,
  OAUTH_TOKEN,
  OpenApiParameter,
  OpenApiPathItem,
  parameterRef,
  SecurityRequirement,
  SERVICE_FAILURES,
} from './openapi-operation';
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

const LOG_LIMIT: OpenApiParameter = {
  name: 'limit',
  in: 'query',
  description: `Page size, 1-${EGRESS_LOG_MAX_LIMIT}; anything else: 400.`,
  schema: { type: 'integer', minimum: 1, maximum: EGRESS_LOG_MAX_LIMIT, default: EGRESS_LOG_DEFAULT_LIMIT },
};

export const egressLog: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'listEgressLog',
    tags: ['Egress'],
    summary: "The requests the egress proxy handled for the intern's commands",
    description:
      'Newest first, one entry per request, allowed or denied. Any credential that can see the intern, its own intern key ' +
      'included. Unknown query parameters are ignored. Entries are kept `EGRESS_LOG_RETENTION_MS` (default 2592000000, 30 ' +
      "days); a deleted intern's log goes when its teardown completes.",
    parameters: [LOG_LIMIT, parameterRef('StartingAfter')],
    responses: {
      '200': jsonResponse('A page of the log.', ref('EgressLogPage')),
      ...errorResponses([...INTERN_ACCESS, 'invalid_body', ...SERVICE_FAILURES]),
    },
  },
};
