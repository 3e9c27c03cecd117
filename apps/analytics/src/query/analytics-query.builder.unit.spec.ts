import { ANALYTICS_CATALOGUE, ANALYTICS_DATE_FIELD, parseAnalyticsQuery } from '@interns/contracts';
import { buildAnalyticsSql } from './analytics-query.builder';
import { DIMENSION_COLUMNS, GRANULARITY_SQL, METRIC_SQL, OPERATOR_SQL } from './analytics-sql.catalogue';

const names = (entries: { name: string }[]) => entries.map((entry) => entry.name).sort();

describe('analytics SQL', () => {
  it('maps exactly the catalogue, and no name collides with another or with date', () => {
    expect(Object.keys(METRIC_SQL).sort()).toEqual(names(ANALYTICS_CATALOGUE.metrics));
    expect(Object.keys(DIMENSION_COLUMNS).sort()).toEqual(names(ANALYTICS_CATALOGUE.dimensions));
    expect(Object.keys(GRANULARITY_SQL).sort()).toEqual(names(ANALYTICS_CATALOGUE.granularities));
    expect(Object.keys(OPERATOR_SQL).sort()).toEqual(names(ANALYTICS_CATALOGUE.operators));
    const keys = [...names(ANALYTICS_CATALOGUE.metrics), ...names(ANALYTICS_CATALOGUE.dimensions), ANALYTICS_DATE_FIELD];
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('binds every value and spells no name of the request into the text', () => {
    const query = parseAnalyticsQuery({
      metrics: ['tokens_total', 'error_rate'],
      dimensions: ['model', 'user'],
      filters: [
        { field: 'model', operator: 'in', value: ["x'); DROP TABLE t; --", 7] },
        { field: 'user', operator: 'gte', value: 'robert"; --', include_unset: true },
      ],
      granularity: 'hour',
      time_range: { start: '2030-01-01T00:00:00Z', end: '2030-01-02T00:00:00Z' },
      order_by: { field: 'error_rate', direction: 'asc' },
      limit: 10,
      group_limit: 3,
    });
    const sql = buildAnalyticsSql(query, "acme' OR 1=1");
    expect(sql.values).toEqual([
      "acme' OR 1=1",
      '2030-01-01T00:00:00.000Z',
      '2030-01-02T00:00:00.000Z',
      ["x'); DROP TABLE t; --", '7'],
      'robert"; --',
      3,
      11,
    ]);
    for (const text of ['DROP', 'robert', 'acme', 'tokens_total', 'error_rate', '"model"', '"user"']) expect(sql.text).not.toContain(text);
    expect(sql.text).toContain('organization_id = $1 AND started_at >= $2::timestamptz AND started_at < $3::timestamptz');
    expect(sql.text).toContain('(user_id COLLATE "C" >= $5::text OR user_id IS NULL)');
    expect(sql.text).toMatch(/LIMIT \$6\) SELECT .* LIMIT \$7$/);
    expect(sql.columns).toEqual([
      { alias: 'd0', key: 'model', kind: 'dimension' },
      { alias: 'd1', key: 'user', kind: 'dimension' },
      { alias: 'date', key: 'date', kind: 'date' },
      { alias: 'm0', key: 'tokens_total', kind: 'metric' },
      { alias: 'm1', key: 'error_rate', kind: 'metric' },
    ]);
  });

  it('has no GROUP BY for totals, and orders by order_by first, then bucket, first metric and dimensions', () => {
    const totals = buildAnalyticsSql(parseAnalyticsQuery({ metrics: ['run_count'] }), 'acme');
    expect(totals.text).not.toContain('GROUP BY');
    expect(totals.text).not.toContain('top_groups');
    const ordered = buildAnalyticsSql(
      parseAnalyticsQuery({ metrics: ['run_count'], dimensions: ['intern'], granularity: 'day', order_by: { field: 'intern', direction: 'desc' } }),
      'acme',
    );
    expect(ordered.text).toContain('GROUP BY 1, 2 ORDER BY intern_id COLLATE "C" DESC NULLS LAST, "date" ASC, "m0" DESC NULLS LAST LIMIT $4');
  });
});
