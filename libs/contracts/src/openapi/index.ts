export * from './openapi-document';
export type { JsonSchema } from './json-schema';
export { CORRELATION_ID_RESPONSE_HEADER } from './openapi-responses';
export type { OpenApiHeader, OpenApiMediaType, OpenApiResponse, OpenApiResponses } from './openapi-responses';
