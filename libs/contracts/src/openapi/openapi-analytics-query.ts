/**
 * `POST /analytics/query` in the API document (CONTRACT section 14): the path item and its schemas. The request
 * schema comes from the zod schema the gateway parses the body with; the rows are as strict as the catalogue
 * allows (only its dimension and metric names, and `date`).
 */
import { ANALYTICS_CATALOGUE } from '../analytics';
import { ANALYTICS_DATE_FIELD, ANALYTICS_QUERY_LIMITS, analyticsQuerySchema } from '../analytics-query';
import { JsonSchema, nullable, ref, requestSchemaOf, strictObject, TIMESTAMP } from './json-schema';
import { jsonBody, MANAGEMENT_SECURITY, OpenApiPathItem } from './openapi-operation';
import { analyticsErrorResponses, jsonResponse } from './openapi-responses';

const dimensionSchema = (label: string): JsonSchema => ({ ...nullable({ type: 'string' }), description: `${label}; null when unset.` });

const ROW_PROPERTIES: Record<string, JsonSchema> = {
  ...Object.fromEntries(ANALYTICS_CATALOGUE.dimensions.map((dimension) => [dimension.name, dimensionSchema(dimension.display_label)])),
  [ANALYTICS_DATE_FIELD]: { ...TIMESTAMP, description: 'The start of the bucket (UTC), with a granularity.' },
  ...Object.fromEntries(ANALYTICS_CATALOGUE.metrics.map((metric) => [metric.name, { type: 'number', description: metric.display_label }])),
};

export const ANALYTICS_QUERY_SCHEMAS: Record<string, JsonSchema> = {
  AnalyticsQueryRequest: {
    ...requestSchemaOf(analyticsQuerySchema),
    description:
      `Names come from \`GET /analytics/meta\`; metrics and dimensions each at most once. \`value\` is one string or number for ` +
      '`scalar` operators and a non-empty list for `array` ones (dimensions are text: numbers compare as their decimal text, ' +
      '`gt`/`lt` in byte order); a filter never matches an unset field unless `include_unset` is true. `time_range`: ISO 8601 ' +
      `UTC with seconds, start inclusive, end exclusive, start before end; default the last 24 hours. \`minute\` only for ranges ` +
      `of ${ANALYTICS_QUERY_LIMITS.maxMinuteWindowMs / 3_600_000} hours or less. \`order_by.field\`: a requested metric or ` +
      `dimension, or \`date\` with a granularity. \`limit\` (default ${ANALYTICS_QUERY_LIMITS.defaultLimit}) caps the rows; ` +
      '`group_limit` keeps at most that many dimension groups, ranked over the whole range by the `order_by` metric or ' +
      'dimension, otherwise by the first metric descending.',
  },
  AnalyticsRow: {
    type: 'object',
    properties: ROW_PROPERTIES,
    additionalProperties: false,
    description: 'Each requested dimension, `date` when a granularity was given, each requested metric.',
  },
  AnalyticsQueryResult: strictObject({
    data: strictObject({
      data: { type: 'array', items: ref('AnalyticsRow') },
      metadata: strictObject({
        query_time_ms: { type: 'number', minimum: 0 },
        row_count: { type: 'integer', minimum: 0 },
        truncated: { type: 'boolean', description: 'True when `limit` cut rows off.' },
      }),
    }),
  }),
};

export const analyticsQuery: OpenApiPathItem = {
  post: {
    operationId: 'queryAnalytics',
    tags: ['Analytics'],
    summary: "Metrics of the key's organization's runs, grouped, filtered and bucketed",
    description:
      'Management keys only; only runs of the key\'s organization count. Rows are ordered by `order_by`, then the bucket ' +
      'ascending, the first metric descending and the dimensions ascending. Errors carry no `metadata`.',
    security: MANAGEMENT_SECURITY,
    requestBody: jsonBody('AnalyticsQueryRequest'),
    responses: {
      '200': jsonResponse('The rows.', ref('AnalyticsQueryResult')),
      ...analyticsErrorResponses({ body: true, limited: true }),
    },
  },
};
