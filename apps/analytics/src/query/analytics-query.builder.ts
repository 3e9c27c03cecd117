import {
  ANALYTICS_DATE_FIELD,
  type AnalyticsDimensionName,
  type AnalyticsFilter,
  type AnalyticsMetricName,
  type AnalyticsQuery,
  type AnalyticsSortDirection,
} from '@interns/contracts';
import {
  DIMENSION_COLUMNS,
  FACTS_TABLE,
  GRANULARITY_SQL,
  METRIC_SQL,
  OPERATOR_SQL,
  ORGANIZATION_COLUMN,
  TIME_COLUMN,
} from './analytics-sql.catalogue';

/**
 * The SQL of one analytics query, and how its result columns map back to the names the client asked for.
 * Result columns have positional aliases (`d0`, `m1`, `date`), so not even a checked name from the request is
 * spelled into the text: the text is built from analytics-sql.catalogue.ts and placeholders only.
 */
export interface AnalyticsSql {
  text: string;
  values: unknown[];
  /** Result column -> row key, in the row's key order: dimensions, `date`, metrics. */
  columns: { alias: string; key: string; kind: 'dimension' | 'date' | 'metric' }[];
  /** The query's limit; the SQL asks for one row more to tell whether the limit cut rows. */
  limit: number;
}

const DATE_ALIAS = 'date';
const dimensionAlias = (index: number) => `d${index}`;
const metricAlias = (index: number) => `m${index}`;

/** Numbers its placeholders in the order values are bound. */
class Parameters {
  readonly values: unknown[] = [];

  bind(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

function filterCondition(filter: AnalyticsFilter, parameters: Parameters): string {
  const column = DIMENSION_COLUMNS[filter.field];
  const value = Array.isArray(filter.value) ? filter.value.map(String) : String(filter.value);
  const condition = OPERATOR_SQL[filter.operator](column, parameters.bind(value));
  return filter.include_unset ? `(${condition} OR ${column} IS NULL)` : `(${condition})`;
}

/** The organization, the time range (start inclusive, end exclusive) and the filters, all bound. */
function whereClause(query: AnalyticsQuery, organizationId: string, parameters: Parameters): string {
  const conditions = [
    `${ORGANIZATION_COLUMN} = ${parameters.bind(organizationId)}`,
    `${TIME_COLUMN} >= ${parameters.bind(query.time_range.start)}::timestamptz`,
    `${TIME_COLUMN} < ${parameters.bind(query.time_range.end)}::timestamptz`,
    ...query.filters.map((filter) => filterCondition(filter, parameters)),
  ];
  return conditions.join(' AND ');
}

const NULLS_LAST = 'NULLS LAST';
const sortOf = (direction: AnalyticsSortDirection) => (direction === 'asc' ? 'ASC' : 'DESC');
/** Dimension values sort in byte order, as the order operators compare them. */
const dimensionSort = (dimension: AnalyticsDimensionName, direction: AnalyticsSortDirection) =>
  `${DIMENSION_COLUMNS[dimension]} COLLATE "C" ${sortOf(direction)} ${NULLS_LAST}`;
const isMetric = (query: AnalyticsQuery, field: string): field is AnalyticsMetricName =>
  (query.metrics as string[]).includes(field);
const isDimension = (query: AnalyticsQuery, field: string): field is AnalyticsDimensionName =>
  (query.dimensions as string[]).includes(field);

/**
 * The row order: `order_by` first, then the default keys as tie-breakers (so a limit always cuts the same rows):
 * the bucket ascending, the first metric descending, the dimensions ascending.
 */
function orderByClause(query: AnalyticsQuery): string {
  const keys: { field: string; direction: AnalyticsSortDirection }[] = [];
  if (query.order_by !== undefined) keys.push(query.order_by);
  if (query.granularity !== undefined) keys.push({ field: ANALYTICS_DATE_FIELD, direction: 'asc' });
  keys.push({ field: query.metrics[0], direction: 'desc' });
  for (const dimension of query.dimensions) keys.push({ field: dimension, direction: 'asc' });
  const seen = new Set<string>();
  const terms: string[] = [];
  for (const { field, direction } of keys) {
    if (seen.has(field)) continue;
    seen.add(field);
    if (field === ANALYTICS_DATE_FIELD) terms.push(`"${DATE_ALIAS}" ${sortOf(direction)}`);
    else if (isMetric(query, field)) terms.push(`"${metricAlias(query.metrics.indexOf(field))}" ${sortOf(direction)} ${NULLS_LAST}`);
    else if (isDimension(query, field)) terms.push(dimensionSort(field, direction));
  }
  return terms.join(', ');
}

/**
 * `group_limit`: the dimension groups that may appear, ranked over the whole time range by the `order_by` metric
 * or dimension (with its direction), otherwise by the first metric descending; ties by the dimensions ascending.
 * Groups are compared as text arrays, whose equality treats two nulls as equal (an unset dimension is a group
 * too) and which hash, so the main query keeps its rows with a hashed semi-join.
 */
function topGroupsClause(query: AnalyticsQuery, where: string, groupLimit: number, parameters: Parameters): string {
  const columns = query.dimensions.map((dimension) => DIMENSION_COLUMNS[dimension]);
  const orderBy = query.order_by;
  const rank =
    orderBy !== undefined && isMetric(query, orderBy.field)
      ? `${METRIC_SQL[orderBy.field]} ${sortOf(orderBy.direction)} ${NULLS_LAST}`
      : orderBy !== undefined && isDimension(query, orderBy.field)
        ? dimensionSort(orderBy.field, orderBy.direction)
        : `${METRIC_SQL[query.metrics[0]]} DESC ${NULLS_LAST}`;
  const tieBreaks = query.dimensions.map((dimension) => dimensionSort(dimension, 'asc'));
  return (
    `WITH top_groups AS (SELECT ARRAY[${columns.join(', ')}]::text[] AS group_key FROM ${FACTS_TABLE} WHERE ${where} ` +
    `GROUP BY ${columns.join(', ')} ORDER BY ${[rank, ...tieBreaks].join(', ')} LIMIT ${parameters.bind(groupLimit)}) `
  );
}

/** The SQL for `query` over the runs of `organizationId`. */
export function buildAnalyticsSql(query: AnalyticsQuery, organizationId: string): AnalyticsSql {
  const parameters = new Parameters();
  const where = whereClause(query, organizationId, parameters);
  const select: string[] = [];
  const columns: AnalyticsSql['columns'] = [];
  query.dimensions.forEach((dimension, index) => {
    select.push(`${DIMENSION_COLUMNS[dimension]} AS "${dimensionAlias(index)}"`);
    columns.push({ alias: dimensionAlias(index), key: dimension, kind: 'dimension' });
  });
  if (query.granularity !== undefined) {
    select.push(`${GRANULARITY_SQL[query.granularity]} AS "${DATE_ALIAS}"`);
    columns.push({ alias: DATE_ALIAS, key: ANALYTICS_DATE_FIELD, kind: 'date' });
  }
  const groupCount = select.length;
  query.metrics.forEach((metric, index) => {
    select.push(`${METRIC_SQL[metric]} AS "${metricAlias(index)}"`);
    columns.push({ alias: metricAlias(index), key: metric, kind: 'metric' });
  });

  const withGroups = query.group_limit !== undefined && query.dimensions.length > 0;
  const topGroups = withGroups ? topGroupsClause(query, where, query.group_limit as number, parameters) : '';
  const groupKey = `ARRAY[${query.dimensions.map((dimension) => DIMENSION_COLUMNS[dimension]).join(', ')}]::text[]`;
  const inTopGroups = withGroups ? ` AND ${groupKey} IN (SELECT group_key FROM top_groups)` : '';
  // Without dimensions or buckets there is no GROUP BY: totals are one row, zeros when nothing matched.
  const groupBy = groupCount === 0 ? '' : ` GROUP BY ${Array.from({ length: groupCount }, (_, i) => i + 1).join(', ')}`;
  const text =
    `${topGroups}SELECT ${select.join(', ')} FROM ${FACTS_TABLE} WHERE ${where}${inTopGroups}${groupBy} ` +
    `ORDER BY ${orderByClause(query)} LIMIT ${parameters.bind(query.limit + 1)}`;
  return { text, values: parameters.values, columns, limit: query.limit };
}
