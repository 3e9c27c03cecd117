/**
 * The OpenAPI 3.1 document of the Interns API (docs/api.md, interface version 1.0.0, with runs as resources of
 * section 12), served by the gateway at `GET /api/v1/openapi.json`. Pure data built from the contract's own
 * constants and request schemas; a unit test validates it against the OpenAPI 3.1 schema and the gateway's route
 * table, and an end-to-end test validates real answers of the running system against it. Its parts:
 * openapi-operation.ts (operation types, security, parameters, shared pieces), openapi-paths.ts and
 * openapi-run-paths.ts (one path item per route), openapi-responses.ts, openapi-schemas.ts and
 * openapi-run-schemas.ts (the components).
 */
import {
  HTTP_METHODS,
  INTERN_ROUTE_SECURITY,
  OpenApiParameter,
  OpenApiPathItem,
  PARAMETERS,
  SECURITY_SCHEMES,
  SecurityRequirement,
} from './openapi-operation';
import {
  analyticsMeta,
  chatCompletions,
  daemonAccess,
  daemonSign,
  icon,
  interns,
  invoke,
  oneIntern,
  openApiDocumentPath,
  provision,
  signingKeys,
  suspend,
} from './openapi-paths';
import { analyticsQuery } from './openapi-analytics-query';
import { answerRun, cancelRun, oneRun, questions, runs, runStream } from './openapi-run-paths';
import { oneWebhook, webhookDeliveries, webhooks } from './openapi-webhook-paths';
import { egressLog, egressPolicy } from './openapi-egress-paths';
import { workspaceEvents } from './openapi-event-paths';
import { workspaceFile, workspaceRoot } from './openapi-files-paths';
import { copyInternSecrets, internSecrets, oneInternSecret, oneWorkspaceSecret, workspaceSecrets } from './openapi-vault-paths';
import { aliasHeaders, OPENAPI_HEADERS, OpenApiHeader, OpenApiResponses } from './openapi-responses';
import { OPENAPI_SCHEMAS } from './openapi-schemas';
import type { JsonSchema } from './json-schema';

export const OPENAPI_VERSION = '3.1.0';
export const API_INTERFACE_VERSION = '1.0.0';
/** Every path of the document is relative to this server URL. */
export const API_BASE_PATH = '/api/v1';
/** Where the gateway serves this document, relative to `API_BASE_PATH`. */
export const OPENAPI_DOCUMENT_PATH = '/openapi.json';

export interface OpenApiDocument {
  openapi: typeof OPENAPI_VERSION;
  info: { title: string; version: string; description: string; license: { name: string; identifier: string } };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  security: SecurityRequirement[];
  paths: Record<string, OpenApiPathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters: Record<string, OpenApiParameter>;
    headers: Record<string, OpenApiHeader>;
    securitySchemes: Record<string, Record<string, string>>;
  };
}

/**
 * A deprecated alias answers exactly like its route and adds `Deprecation` and `Link` to every answer,
 * refusals included (CONTRACT section 8).
 */
function deprecatedAlias(item: OpenApiPathItem, successor: string): OpenApiPathItem {
  const alias: OpenApiPathItem = { ...item };
  for (const method of HTTP_METHODS) {
    const operation = item[method];
    if (operation === undefined) continue;
    const responses: OpenApiResponses = {};
    for (const [status, response] of Object.entries(operation.responses)) {
      responses[status] = { ...response, headers: { ...response.headers, ...aliasHeaders() } };
    }
    alias[method] = {
      ...operation,
      operationId: `${operation.operationId}Deprecated`,
      summary: `${operation.summary} (deprecated alias of \`${successor}\`)`,
      deprecated: true,
      responses,
    };
  }
  return alias;
}

export const OPENAPI_DOCUMENT: OpenApiDocument = {
  openapi: OPENAPI_VERSION,
  info: {
    title: 'Interns API',
    version: API_INTERFACE_VERSION,
    description:
      'Hosted assistant runtimes ("interns") owned by a workspace: lifecycle, chat, invoke, runs and their questions, daemon ' +
      'access and signing, analytics. Every request carries `Authorization: Bearer <credential>` unless a route says otherwise. Intern routes ' +
      'are refused on regional hosts (`<region>.<PUBLIC_HOST>`: 403). Errors use the envelope ' +
      '`{"error":{"code","message","metadata":{"reason","retryable"}}}` (no `metadata` on 401 and on analytics routes).\n\n' +
      'Before any route, the HTTP layer answers in the same envelope, with an `X-Correlation-Id`: 400 `invalid_body` for a ' +
      'malformed request (request line, header, framing, a raw non-ASCII byte in the target), 414 `uri_too_long` when the ' +
      'request line alone is over 16 KiB, 431 `headers_too_large` when the head is. Text that is not valid Unicode (a lone ' +
      'surrogate), a NUL where the field cannot hold one, and JSON nested deeper than 64 levels answer 400 `invalid_body` naming ' +
      'the field.\n\n' +
      'Health (`/health/live`, `/health/ready`) and Prometheus `/metrics` are not part of this document: they are the ' +
      'operating interface every process answers on its own port (the gateway on `GATEWAY_PORT`, outside `/api/v1`), ' +
      'probed by orchestrators rather than called by API clients; the README describes them.',
    license: { name: 'Apache 2.0', identifier: 'Apache-2.0' },
  },
  servers: [{ url: API_BASE_PATH, description: 'The gateway, relative to the host the document was fetched from.' }],
  tags: [
    { name: 'Interns', description: 'Lifecycle of interns (interface sections 3-5 of docs/api.md).' },
    { name: 'Chat', description: 'Chat completions and invoke (sections 6-7).' },
    { name: 'Runs', description: 'Runs as resources, resumable streams and the question inbox (section 12).' },
    { name: 'Daemon', description: 'Daemon access and request signing (section 8).' },
    { name: 'Analytics', description: 'Analytics catalogue and query (sections 9 and 14).' },
    { name: 'Webhooks', description: "A workspace's webhook endpoints and their deliveries (section 13)." },
    { name: 'Vault', description: "Secrets of a workspace and of an intern, never answered with their values (section 18)." },
    { name: 'Egress', description: "An intern's egress policy, the hosts its requests may reach, and its egress log (section 19)." },
    { name: 'Files', description: "An intern's workspace files: list, download, upload, delete, inside its sandbox (section 21)." },
    { name: 'Events', description: "The workspace's integration events as they happen, resumable (section 23)." },
    { name: 'Meta', description: 'This document.' },
  ],
  security: INTERN_ROUTE_SECURITY,
  paths: {
    '/interns': interns,
    '/interns/{intern_id}': oneIntern,
    '/interns/{intern_id}/provision': provision,
    '/interns/{intern_id}/suspend': suspend,
    '/interns/{intern_id}/icon': icon,
    '/interns/{intern_id}/egress': egressPolicy,
    '/interns/{intern_id}/egress/log': egressLog,
    '/interns/{intern_id}/chat/completions': chatCompletions,
    '/interns/{intern_id}/invoke': invoke,
    '/interns/{intern_id}/runs': runs,
    '/interns/{intern_id}/runs/{run_id}': oneRun,
    '/interns/{intern_id}/runs/{run_id}/stream': runStream,
    '/interns/{intern_id}/runs/{run_id}/cancel': cancelRun,
    '/interns/{intern_id}/runs/{run_id}/answer': answerRun,
    '/interns/{intern_id}/questions': questions,
    '/interns/{intern_id}/files': workspaceRoot,
    '/interns/{intern_id}/files/{path}': workspaceFile,
    '/interns/{intern_id}/daemon': daemonAccess,
    '/interns/{intern_id}/daemon-access': deprecatedAlias(daemonAccess, '/interns/{intern_id}/daemon'),
    '/interns/{intern_id}/daemon/sign': daemonSign,
    '/interns/{intern_id}/daemon-access/sign': deprecatedAlias(daemonSign, '/interns/{intern_id}/daemon/sign'),
    '/daemon/signing-keys': signingKeys,
    '/analytics/meta': analyticsMeta,
    '/analytics/query': analyticsQuery,
    '/events': workspaceEvents,
    '/webhooks': webhooks,
    '/webhooks/{webhook_id}': oneWebhook,
    '/webhooks/{webhook_id}/deliveries': webhookDeliveries,
    '/vault/secrets': workspaceSecrets,
    '/vault/secrets/{name}': oneWorkspaceSecret,
    '/vault/interns/{intern_id}/secrets': internSecrets,
    '/vault/interns/{intern_id}/secrets/copy': copyInternSecrets,
    '/vault/interns/{intern_id}/secrets/{name}': oneInternSecret,
    [OPENAPI_DOCUMENT_PATH]: openApiDocumentPath,
  },
  components: {
    schemas: OPENAPI_SCHEMAS,
    parameters: PARAMETERS,
    headers: OPENAPI_HEADERS,
    securitySchemes: SECURITY_SCHEMES,
  },
};
