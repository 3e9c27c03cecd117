/**
 * `POST /analytics/query` (CONTRACT section 14): the body's rules and the typed query they produce, shared by the
 * gateway (which answers 400 before asking the service) and the analytics service (which checks again: it trusts
 * no message for what reaches its SQL). One approach to validation as everywhere (zod): a strict object, so an
 * unknown field is a 400, and every name checked against the catalogue. The cross-field rules (operator versus
 * value, the time range, minute granularity, `order_by`) follow the schema in `parseAnalyticsQuery`.
 */
import { z } from 'zod';
import {
  ANALYTICS_DIMENSION_NAMES,
  ANALYTICS_GRANULARITY_NAMES,
  ANALYTICS_METRIC_NAMES,
  ANALYTICS_OPERATOR_NAMES,
  type AnalyticsDimensionName,
  type AnalyticsGranularityName,
  type AnalyticsMetricName,
  type AnalyticsOperatorName,
  analyticsOperatorValueType,
} from './analytics';
import { DomainError } from './errors';

export const ANALYTICS_QUERY_LIMITS = {
  maxDimensions: 2,
  maxFilters: 20,
  /** Values of one `in` / `not_in` filter, and characters of one value. */
  maxFilterValues: 1000,
  maxValueChars: 1000,
  defaultLimit: 1000,
  maxLimit: 10000,
  maxGroupLimit: 10000,
  /** No `time_range`: the last 24 hours. */
  defaultWindowMs: 24 * 60 * 60 * 1000,
  /** `minute` buckets only over windows of 3 hours or less (at most 180 buckets per group). */
  maxMinuteWindowMs: 3 * 60 * 60 * 1000,
} as const;

/** The `order_by` field that names the bucket start (with a granularity). */
export const ANALYTICS_DATE_FIELD = 'date';

/**
 * ISO 8601 in UTC with seconds: `Z` or `+00:00`, fractions of a second allowed. Anything else (no seconds, another
 * offset, a date only) is refused rather than guessed at.
 */
const UTC_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|\+00:00)$/;

export type AnalyticsScalar = string | number;
export type AnalyticsSortDirection = 'asc' | 'desc';

export interface AnalyticsFilter {
  field: AnalyticsDimensionName;
  operator: AnalyticsOperatorName;
  /** One value for `scalar` operators, a non-empty list for `array` ones. */
  value: AnalyticsScalar | AnalyticsScalar[];
  /** Also match rows where the field is not set (null). */
  include_unset: boolean;
}

/**
 * A checked query with its defaults filled in. It is itself a valid body (absent optional parts stay absent),
 * so the service can check what the gateway sends with the same parser.
 */
export interface AnalyticsQuery {
  metrics: AnalyticsMetricName[];
  dimensions: AnalyticsDimensionName[];
  filters: AnalyticsFilter[];
  granularity?: AnalyticsGranularityName;
  /** ISO 8601 UTC with milliseconds; `start` inclusive, `end` exclusive. */
  time_range: { start: string; end: string };
  order_by?: { field: AnalyticsMetricName | AnalyticsDimensionName | typeof ANALYTICS_DATE_FIELD; direction: AnalyticsSortDirection };
  limit: number;
  group_limit?: number;
}

/** What the gateway sends with `analytics.qry.query`. */
export interface AnalyticsQueryRequest {
  correlationId: string;
  /** The management key's organization: the only one whose runs count. */
  organizationId: string;
  query: AnalyticsQuery;
}

/** A row: each requested dimension (null when unset), `date` with a granularity, each metric. */
export type AnalyticsRow = Record<string, string | number | null>;

export interface AnalyticsQueryMetadata {
  /** Milliseconds the analytics service spent on the query, database included. */
  query_time_ms: number;
  row_count: number;
  /** True when `limit` cut rows off. */
  truncated: boolean;
}

/** The 200 body of `POST /analytics/query`. */
export interface AnalyticsQueryReply {
  data: { data: AnalyticsRow[]; metadata: AnalyticsQueryMetadata };
}

const unknownName = (kind: string) => (issue: { input?: unknown }) => `unknown ${kind} ${JSON.stringify(issue.input)}`;

const metric = z.enum(ANALYTICS_METRIC_NAMES, { error: unknownName('metric') });
const dimension = z.enum(ANALYTICS_DIMENSION_NAMES, { error: unknownName('dimension') });
const { maxValueChars, maxFilterValues, maxDimensions, maxFilters } = ANALYTICS_QUERY_LIMITS;
const scalar = z.union([z.string().max(maxValueChars, `values are at most ${maxValueChars} characters`), z.number()], {
  error: 'must be a string or a number',
});
const timestamp = z.string({ error: 'must be an ISO 8601 UTC timestamp' }).regex(UTC_TIMESTAMP, {
  error: 'must be an ISO 8601 UTC timestamp with seconds, such as 2030-01-31T00:00:00Z',
});
/** An integer 1-`max`, one message for every way of missing it. */
function count(name: string, max: number) {
  const message = `${name} must be an integer 1-${max}`;
  return z.number({ error: message }).int(message).min(1, message).max(max, message);
}

const filterSchema = z.strictObject({
  field: z.enum(ANALYTICS_DIMENSION_NAMES, { error: unknownName('filter field') }),
  operator: z.enum(ANALYTICS_OPERATOR_NAMES, { error: unknownName('operator') }),
  value: z.union([scalar, z.array(scalar).max(maxFilterValues, `at most ${maxFilterValues} values`)], {
    error: 'must be a string, a number or a list of those',
  }),
  include_unset: z.boolean().optional(),
});

export const analyticsQuerySchema = z.strictObject({
  metrics: z.array(metric, { error: 'must be a list of metric names' }).min(1, 'name at least one metric'),
  dimensions: z
    .array(dimension, { error: 'must be a list of dimension names' })
    .max(maxDimensions, `at most ${maxDimensions} dimensions`)
    .optional(),
  filters: z.array(filterSchema, { error: 'must be a list of filters' }).max(maxFilters, `at most ${maxFilters} filters`).optional(),
  granularity: z.enum(ANALYTICS_GRANULARITY_NAMES, { error: unknownName('granularity') }).optional(),
  time_range: z.strictObject({ start: timestamp, end: timestamp }).optional(),
  order_by: z
    .strictObject({
      field: z.string({ error: 'must be a requested metric or dimension, or date' }),
      direction: z.enum(['asc', 'desc'], { error: 'must be "asc" or "desc"' }),
    })
    .optional(),
  limit: count('limit', ANALYTICS_QUERY_LIMITS.maxLimit).optional(),
  group_limit: count('group_limit', ANALYTICS_QUERY_LIMITS.maxGroupLimit).optional(),
});

type AnalyticsQueryBody = z.infer<typeof analyticsQuerySchema>;

function invalid(message: string): DomainError {
  return new DomainError('invalid_body', message);
}

/** `filters[1].value`, `time_range.start`: where the first broken rule is, as a client wrote it. */
function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => {
    if (typeof key === 'number') return `${text}[${key}]`;
    return text ? `${text}.${String(key)}` : String(key);
  }, '');
}

/** Like `describeIssue`, but a query names array items `field[0]` and unknown keys by their full path. */
function describeQueryIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid body';
  const at = pathOf(issue.path);
  if (issue.code === 'unrecognized_keys') return `unknown field: ${issue.keys.map((key) => (at ? `${at}.${key}` : key)).join(', ')}`;
  return at ? `${at}: ${issue.message}` : issue.message;
}

function assertDistinct(names: readonly string[], field: string): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw invalid(`${field}: ${JSON.stringify(name)} is named twice`);
    seen.add(name);
  }
}

/** A timestamp the pattern accepts but the calendar does not (February 30th, hour 24) is refused too. */
function instantOf(text: string, field: string): number {
  const match = UTC_TIMESTAMP.exec(text);
  const millis = Date.parse(text);
  if (match === null || Number.isNaN(millis) || new Date(millis).toISOString().slice(0, 19) !== match[1]) {
    throw invalid(`${field}: ${JSON.stringify(text)} is not a valid UTC date and time`);
  }
  return millis;
}

function timeRangeOf(body: AnalyticsQueryBody, now: Date): AnalyticsQuery['time_range'] {
  if (body.time_range === undefined) {
    return { start: new Date(now.getTime() - ANALYTICS_QUERY_LIMITS.defaultWindowMs).toISOString(), end: now.toISOString() };
  }
  const start = instantOf(body.time_range.start, 'time_range.start');
  const end = instantOf(body.time_range.end, 'time_range.end');
  if (start >= end) throw invalid('time_range: start must be before end');
  return { start: new Date(start).toISOString(), end: new Date(end).toISOString() };
}

function filterOf(filter: NonNullable<AnalyticsQueryBody['filters']>[number], index: number): AnalyticsFilter {
  const isList = Array.isArray(filter.value);
  if (analyticsOperatorValueType(filter.operator) === 'array') {
    if (!isList || (filter.value as AnalyticsScalar[]).length === 0) {
      throw invalid(`filters[${index}].value: operator ${JSON.stringify(filter.operator)} takes a non-empty list of strings or numbers`);
    }
  } else if (isList) {
    throw invalid(`filters[${index}].value: operator ${JSON.stringify(filter.operator)} takes one string or number`);
  }
  return { field: filter.field, operator: filter.operator, value: filter.value, include_unset: filter.include_unset ?? false };
}

function orderByOf(body: AnalyticsQueryBody, query: Omit<AnalyticsQuery, 'order_by'>): AnalyticsQuery['order_by'] {
  if (body.order_by === undefined) return undefined;
  const { field, direction } = body.order_by;
  const requested: readonly string[] = [...query.metrics, ...query.dimensions];
  const isDate = field === ANALYTICS_DATE_FIELD && query.granularity !== undefined;
  if (!isDate && !requested.includes(field)) {
    throw invalid(
      `order_by.field: ${JSON.stringify(field)} is not a requested metric or dimension` +
        (field === ANALYTICS_DATE_FIELD ? ' (date needs a granularity)' : ''),
    );
  }
  return { field: field as NonNullable<AnalyticsQuery['order_by']>['field'], direction };
}

/**
 * The body of `POST /analytics/query` as a checked query, defaults filled in (`now` places the default window).
 * Throws DomainError('invalid_body') naming the first broken rule: the field and, for names, the name.
 */
export function parseAnalyticsQuery(value: unknown, now: Date = new Date()): AnalyticsQuery {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('body must be a JSON object');
  const result = analyticsQuerySchema.safeParse(value);
  if (!result.success) throw invalid(describeQueryIssue(result.error));
  const body = result.data;
  assertDistinct(body.metrics, 'metrics');
  assertDistinct(body.dimensions ?? [], 'dimensions');
  const query: AnalyticsQuery = {
    metrics: body.metrics,
    dimensions: body.dimensions ?? [],
    filters: (body.filters ?? []).map(filterOf),
    time_range: timeRangeOf(body, now),
    limit: body.limit ?? ANALYTICS_QUERY_LIMITS.defaultLimit,
  };
  if (body.granularity !== undefined) query.granularity = body.granularity;
  if (body.group_limit !== undefined) query.group_limit = body.group_limit;
  if (
    query.granularity === 'minute' &&
    Date.parse(query.time_range.end) - Date.parse(query.time_range.start) > ANALYTICS_QUERY_LIMITS.maxMinuteWindowMs
  ) {
    throw invalid('granularity: minute needs a time_range of 3 hours or less');
  }
  const orderBy = orderByOf(body, query);
  if (orderBy !== undefined) query.order_by = orderBy;
  return query;
}
