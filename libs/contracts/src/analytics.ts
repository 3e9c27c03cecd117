/**
 * The analytics catalogue (CONTRACT section 9): what `GET /analytics/meta` answers, what the analytics
 * service can group by, filter with and compute. One list here, read by the service that answers and by
 * the tests that check the answer.
 */

export interface AnalyticsDimension {
  name: string;
  display_label: string;
}

export interface AnalyticsGranularity {
  name: string;
  display_label: string;
}

export type AnalyticsDisplayFormat = 'number' | 'latency' | 'percent';

export interface AnalyticsMetric {
  name: string;
  display_label: string;
  /** A ratio of two counts (shown as a rate, never summed across groups). */
  is_rate: boolean;
  display_format: AnalyticsDisplayFormat;
}

export interface AnalyticsOperator {
  name: string;
  /** `scalar`: one value; `array`: a list of values. */
  value_type: 'scalar' | 'array';
}

export interface AnalyticsCatalogue {
  dimensions: AnalyticsDimension[];
  granularities: AnalyticsGranularity[];
  metrics: AnalyticsMetric[];
  operators: AnalyticsOperator[];
}

/** The 200 body of `GET /analytics/meta`. */
export interface AnalyticsMetaReply {
  data: AnalyticsCatalogue;
}

/** What the gateway sends with `analytics.qry.meta` (who asked, for the service's logs). */
export interface AnalyticsMetaRequest {
  correlationId: string;
  organizationId: string;
}

const DIMENSIONS = [
  { name: 'model', display_label: 'Model' },
  { name: 'intern', display_label: 'Intern' },
  { name: 'workspace', display_label: 'Workspace' },
  { name: 'api_key_id', display_label: 'API Key' },
  { name: 'user', display_label: 'User' },
  { name: 'origin', display_label: 'Origin' },
  { name: 'finish_reason', display_label: 'Finish Reason' },
] as const satisfies readonly AnalyticsDimension[];

const GRANULARITIES = [
  { name: 'minute', display_label: 'Minute' },
  { name: 'hour', display_label: 'Hour' },
  { name: 'day', display_label: 'Day' },
  { name: 'week', display_label: 'Week' },
  { name: 'month', display_label: 'Month' },
] as const satisfies readonly AnalyticsGranularity[];

const METRICS = [
  { name: 'request_count', display_label: 'Request Count', is_rate: false, display_format: 'number' },
  { name: 'run_count', display_label: 'Run Count', is_rate: false, display_format: 'number' },
  { name: 'tokens_prompt', display_label: 'Prompt Tokens', is_rate: false, display_format: 'number' },
  { name: 'tokens_completion', display_label: 'Completion Tokens', is_rate: false, display_format: 'number' },
  { name: 'tokens_total', display_label: 'Total Tokens', is_rate: false, display_format: 'number' },
  { name: 'avg_latency', display_label: 'Average Latency', is_rate: false, display_format: 'latency' },
  { name: 'error_rate', display_label: 'Error Rate', is_rate: true, display_format: 'percent' },
] as const satisfies readonly AnalyticsMetric[];

const OPERATORS = [
  { name: 'eq', value_type: 'scalar' },
  { name: 'neq', value_type: 'scalar' },
  { name: 'gt', value_type: 'scalar' },
  { name: 'gte', value_type: 'scalar' },
  { name: 'lt', value_type: 'scalar' },
  { name: 'lte', value_type: 'scalar' },
  { name: 'in', value_type: 'array' },
  { name: 'not_in', value_type: 'array' },
] as const satisfies readonly AnalyticsOperator[];

/** The catalogue's names as types: what a query may name, and what the analytics service must map to SQL. */
export type AnalyticsDimensionName = (typeof DIMENSIONS)[number]['name'];
export type AnalyticsGranularityName = (typeof GRANULARITIES)[number]['name'];
export type AnalyticsMetricName = (typeof METRICS)[number]['name'];
export type AnalyticsOperatorName = (typeof OPERATORS)[number]['name'];

type NonEmpty<T> = [T, ...T[]];
const namesOf = <T extends { name: string }>(entries: readonly T[]) => entries.map((entry) => entry.name) as NonEmpty<T['name']>;

export const ANALYTICS_DIMENSION_NAMES = namesOf(DIMENSIONS);
export const ANALYTICS_GRANULARITY_NAMES = namesOf(GRANULARITIES);
export const ANALYTICS_METRIC_NAMES = namesOf(METRICS);
export const ANALYTICS_OPERATOR_NAMES = namesOf(OPERATORS);

/** Whether an operator takes one value or a list (`value_type`). */
export function analyticsOperatorValueType(operator: AnalyticsOperatorName): AnalyticsOperator['value_type'] {
  return OPERATORS.find((entry) => entry.name === operator)?.value_type ?? 'scalar';
}

export const ANALYTICS_CATALOGUE: AnalyticsCatalogue = {
  dimensions: [...DIMENSIONS],
  granularities: [...GRANULARITIES],
  metrics: [...METRICS],
  operators: [...OPERATORS],
};

/** Analytics routes answer errors without `metadata` (CONTRACT section 2). */
export interface AnalyticsErrorEnvelope {
  error: { code: number; message: string };
}

export const ANALYTICS_ERROR_MESSAGES = {
  missingHeader: 'missing authentication header',
  managementOnly: 'only management keys may do this',
} as const;

export function analyticsErrorEnvelope(code: number, message: string): AnalyticsErrorEnvelope {
  return { error: { code, message } };
}
