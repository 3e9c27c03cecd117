export * from './openapi-document';
export { HTTP_METHODS } from './openapi-operation';
export type {
  HttpMethod,
  OpenApiOperation,
  OpenApiParameter,
  OpenApiPathItem,
  OpenApiRequestBody,
  SecurityRequirement,
} from './openapi-operation';
export type { JsonSchema } from './json-schema';
export { CORRELATION_ID_RESPONSE_HEADER } from './openapi-responses';
export type { OpenApiHeader, OpenApiMediaType, OpenApiResponse, OpenApiResponses } from './openapi-responses';
