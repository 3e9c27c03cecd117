import type { AnalyticsDimensionName, AnalyticsGranularityName, AnalyticsMetricName, AnalyticsOperatorName } from '@interns/contracts';

/**
 * Every catalogue name as the fixed SQL it stands for: the only text a query puts into SQL. The records are typed
 * by the catalogue's names, so a name added to the catalogue does not compile until it has its SQL here, and a
 * name that is not in the catalogue has none. Values never appear in this text: they are bind parameters.
 *
 * What the metrics mean (docs/architecture.md, "Analytics query"): one row of `run_facts` is one run.
 */

export const FACTS_TABLE = 'analytics.run_facts';

/** When a run counts: when it started. A run whose `run.started` has not arrived yet counts nowhere until it does. */
export const TIME_COLUMN = 'started_at';

/** Scopes every query; a run whose intern is not known yet (no organization) counts nowhere until it is. */
export const ORGANIZATION_COLUMN = 'organization_id';

/** Aggregates over the runs of a group, as double precision so the driver hands back JS numbers, never strings. */
export const METRIC_SQL: Record<AnalyticsMetricName, string> = {
  /** Prompts the runs served: each run's first prompt plus the prompts (steering) that joined it. */
  request_count: 'coalesce(sum(prompt_count), 0)::float8',
  run_count: 'count(*)::float8',
  /** Usage as each run's end reported it; runs without usage (failed early, not ended) add nothing. */
  tokens_prompt: 'coalesce(sum(prompt_tokens), 0)::float8',
  tokens_completion: 'coalesce(sum(completion_tokens), 0)::float8',
  /** Always tokens_prompt + tokens_completion (the stored total is null when either part is). */
  tokens_total: '(coalesce(sum(prompt_tokens), 0) + coalesce(sum(completion_tokens), 0))::float8',
  /** Milliseconds from start to end, averaged over the runs that ended; 0 when none has. */
  avg_latency: 'coalesce(round(avg(latency_ms), 3), 0)::float8',
  /** Failed runs over ended runs (stop, length, error, cancelled), 0-1; 0 when none has ended. */
  error_rate:
    "coalesce(count(*) FILTER (WHERE finish_reason = 'error')::float8 / nullif(count(*) FILTER (WHERE finish_reason IS NOT NULL), 0), 0)",
};

export const DIMENSION_COLUMNS: Record<AnalyticsDimensionName, string> = {
  model: 'model',
  intern: 'intern_id',
  workspace: 'workspace_id',
  api_key_id: 'api_key_id',
  user: 'user_id',
  origin: 'origin',
  finish_reason: 'finish_reason',
};

/** Buckets start on UTC calendar boundaries (weeks on Mondays), whatever the session's time zone. */
export const GRANULARITY_SQL: Record<AnalyticsGranularityName, string> = {
  minute: `date_trunc('minute', ${TIME_COLUMN}, 'UTC')`,
  hour: `date_trunc('hour', ${TIME_COLUMN}, 'UTC')`,
  day: `date_trunc('day', ${TIME_COLUMN}, 'UTC')`,
  week: `date_trunc('week', ${TIME_COLUMN}, 'UTC')`,
  month: `date_trunc('month', ${TIME_COLUMN}, 'UTC')`,
};

/**
 * A condition on a dimension column and the placeholder of its value (text, or text[] for lists). Dimensions are
 * text, so numbers are compared as their decimal text, and the order comparisons use byte order (`COLLATE "C"`),
 * the same order rows are sorted in, whatever the database's collation. A null column matches no operator (not
 * even `neq` / `not_in`): that is what `include_unset` is for.
 */
export const OPERATOR_SQL: Record<AnalyticsOperatorName, (column: string, placeholder: string) => string> = {
  eq: (column, value) => `${column} = ${value}::text`,
  neq: (column, value) => `${column} <> ${value}::text`,
  gt: (column, value) => `${column} COLLATE "C" > ${value}::text`,
  gte: (column, value) => `${column} COLLATE "C" >= ${value}::text`,
  lt: (column, value) => `${column} COLLATE "C" < ${value}::text`,
  lte: (column, value) => `${column} COLLATE "C" <= ${value}::text`,
  in: (column, values) => `${column} = ANY(${values}::text[])`,
  not_in: (column, values) => `${column} <> ALL(${values}::text[])`,
};
