/**
 * The operations of the vault (interface section 18), one path item per route (paths relative to `API_BASE_PATH`):
 * the workspace's secrets and a visible intern's own. Credentials: user and organization keys and OAuth tokens with
 * `interns`; intern keys are answered 404 on every vault route, management keys 401. No response ever holds a value.
 */
import { ref } from './json-schema';
import { API_KEY, BODY_RULES, NO_BODY, NO_BODY_RULES, OAUTH_TOKEN, OpenApiParameter, OpenApiPathItem, parameterRef, SecurityRequirement, SERVICE_FAILURES } from './openapi-operation';
import { commonHeaders, errorResponses, jsonResponse, OpenApiResponses } from './openapi-responses';
import { VAULT_LIST_DEFAULT_LIMIT, VAULT_LIST_MAX_LIMIT, VAULT_LIST_MAX_OFFSET, VAULT_MAX_NAME_CHARS, VAULT_NAME_PATTERN } from '../vault';

export const VAULT_SECURITY: SecurityRequirement[] = [{ [API_KEY]: ['user', 'organization'] }, { [OAUTH_TOKEN]: ['interns'] }];

const SECRET_NAME: OpenApiParameter = {
  name: 'name',
  in: 'path',
  required: true,
  description: 'The secret\'s name: lowercase letters and digits in words joined by single underscores, starting with a letter; else 400.',
  schema: { type: 'string', minLength: 1, maxLength: VAULT_MAX_NAME_CHARS, pattern: VAULT_NAME_PATTERN.source },
};

const LIST_PARAMETERS: OpenApiParameter[] = [
  {
    name: 'limit',
    in: 'query',
    required: false,
    description: `At most this many secrets (default ${VAULT_LIST_DEFAULT_LIMIT}).`,
    schema: { type: 'integer', minimum: 1, maximum: VAULT_LIST_MAX_LIMIT, default: VAULT_LIST_DEFAULT_LIMIT },
  },
  {
    name: 'offset',
    in: 'query',
    required: false,
    description: 'Skip this many secrets (by name).',
    schema: { type: 'integer', minimum: 0, maximum: VAULT_LIST_MAX_OFFSET, default: 0 },
  },
];

/** The intern routes' refusals, with 503 for writes while lifecycle writes are off. */
function vaultErrors(write: boolean, ...reasons: Parameters<typeof errorResponses>[0]): OpenApiResponses {
  const responses = errorResponses([
    'forbidden',
    'insufficient_scope',
    'not_found',
    ...reasons,
    ...SERVICE_FAILURES,
    ...(write ? (['vault_writes_disabled'] as const) : []),
  ]);
  responses['401'] = { ...responses['401'], description: 'Credential missing, unknown, disabled or expired, or a management key: `invalid or missing API key`, no `metadata`.' };
  responses['404'] = {
    ...responses['404'],
    description: `${responses['404'].description} Also every vault route for an intern key, and a secret the vault does not hold.`,
  };
  return responses;
}

const NO_CONTENT = { description: 'Deleted.', headers: commonHeaders() };

function secretsOf(scope: 'workspace' | 'intern', operationSuffix: string): { collection: OpenApiPathItem; one: OpenApiPathItem } {
  const whose = scope === 'workspace' ? "the credential's workspace" : "the intern's own vault";
  return {
    collection: {
      get: {
        operationId: `list${operationSuffix}Secrets`,
        tags: ['Vault'],
        summary: `List the secrets of ${whose}`,
        description: 'Ordered by name; metadata only, never a value.',
        security: VAULT_SECURITY,
        parameters: LIST_PARAMETERS,
        responses: { '200': jsonResponse('A page of secrets.', ref('VaultSecretList')), ...vaultErrors(false, 'invalid_body') },
      },
    },
    one: {
      parameters: [SECRET_NAME],
      put: {
        operationId: `put${operationSuffix}Secret`,
        tags: ['Vault'],
        summary: `Create or replace a secret of ${whose}`,
        description:
          'The value is sealed at once (only the egress proxy can open it) and released only to the hosts named. A replace ' +
          'takes the new value, hosts and time. Recorded in the audit (who, scope, name, fingerprint).',
        security: VAULT_SECURITY,
        requestBody: { required: true, content: { 'application/json': { schema: ref('VaultSecretWrite') } } },
        responses: { '200': jsonResponse('The secret, without its value.', ref('VaultSecretOne')), ...vaultErrors(true, ...BODY_RULES) },
      },
      delete: {
        operationId: `delete${operationSuffix}Secret`,
        tags: ['Vault'],
        summary: `Delete a secret of ${whose}`,
        security: VAULT_SECURITY,
        requestBody: NO_BODY,
        responses: { '204': NO_CONTENT, ...vaultErrors(true, ...NO_BODY_RULES) },
      },
    },
  };
}

const workspace = secretsOf('workspace', 'Workspace');
const intern = secretsOf('intern', 'Intern');

export const workspaceSecrets: OpenApiPathItem = workspace.collection;
export const oneWorkspaceSecret: OpenApiPathItem = workspace.one;
export const internSecrets: OpenApiPathItem = { parameters: [parameterRef('InternId')], ...intern.collection };
export const oneInternSecret: OpenApiPathItem = { ...intern.one, parameters: [parameterRef('InternId'), SECRET_NAME] };
export const copyInternSecrets: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  post: {
    operationId: 'copyInternSecrets',
    tags: ['Vault'],
    summary: "Copy workspace secrets into the intern's vault",
    description:
      "Values and hosts, replacing the intern's secrets of the same names; all or none: a name missing from the workspace " +
      'is 404 and nothing is copied. Fingerprints are those of the intern\'s vault.',
    security: VAULT_SECURITY,
    requestBody: { required: true, content: { 'application/json': { schema: ref('VaultCopyRequest') } } },
    responses: { '200': jsonResponse('The copies, in the order named.', ref('VaultSecretCopies')), ...vaultErrors(true, ...BODY_RULES) },
  },
};
