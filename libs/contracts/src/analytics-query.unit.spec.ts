import { ANALYTICS_CATALOGUE } from './analytics';
import { ANALYTICS_QUERY_LIMITS, analyticsQuerySchema, parseAnalyticsQuery } from './analytics-query';
import { DomainError } from './errors';

const NOW = new Date('2030-01-02T12:00:00.000Z');
const RANGE = { start: '2030-01-01T00:00:00Z', end: '2030-01-02T00:00:00Z' };
const base = { metrics: ['run_count'] };

function refusal(body: unknown): string {
  try {
    parseAnalyticsQuery(body, NOW);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).reason).toBe('invalid_body');
    return (error as DomainError).message;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

describe('parseAnalyticsQuery', () => {
  it('fills the defaults: no dimensions or filters, the last 24 hours, limit 1000', () => {
    expect(parseAnalyticsQuery(base, NOW)).toEqual({
      metrics: ['run_count'],
      dimensions: [],
      filters: [],
      time_range: { start: '2030-01-01T12:00:00.000Z', end: '2030-01-02T12:00:00.000Z' },
      limit: 1000,
    });
  });

  it('keeps everything a full body names, normalising timestamps and include_unset', () => {
    const query = parseAnalyticsQuery(
      {
        metrics: ['tokens_total', 'error_rate'],
        dimensions: ['model', 'intern'],
        filters: [
          { field: 'origin', operator: 'eq', value: 'chat' },
          { field: 'user', operator: 'not_in', value: ['alice', 7], include_unset: true },
        ],
        granularity: 'day',
        time_range: { start: '2030-01-01T00:00:00+00:00', end: '2030-01-31T00:00:00.5Z' },
        order_by: { field: 'date', direction: 'asc' },
        limit: 10000,
        group_limit: 5,
      },
      NOW,
    );
    expect(query).toEqual({
      metrics: ['tokens_total', 'error_rate'],
      dimensions: ['model', 'intern'],
      filters: [
        { field: 'origin', operator: 'eq', value: 'chat', include_unset: false },
        { field: 'user', operator: 'not_in', value: ['alice', 7], include_unset: true },
      ],
      granularity: 'day',
      time_range: { start: '2030-01-01T00:00:00.000Z', end: '2030-01-31T00:00:00.500Z' },
      order_by: { field: 'date', direction: 'asc' },
      limit: 10000,
      group_limit: 5,
    });
    // What the gateway sends parses to itself in the service.
    expect(parseAnalyticsQuery(JSON.parse(JSON.stringify(query)), new Date(0))).toEqual(query);
  });

  it('accepts every catalogue name where names are taken', () => {
    for (const metric of ANALYTICS_CATALOGUE.metrics) expect(() => parseAnalyticsQuery({ metrics: [metric.name] }, NOW)).not.toThrow();
    for (const { name } of ANALYTICS_CATALOGUE.dimensions) {
      expect(() => parseAnalyticsQuery({ ...base, dimensions: [name], filters: [{ field: name, operator: 'eq', value: 'x' }] }, NOW)).not.toThrow();
    }
    for (const { name } of ANALYTICS_CATALOGUE.granularities) {
      const range = { start: '2030-01-01T00:00:00Z', end: '2030-01-01T03:00:00Z' };
      expect(() => parseAnalyticsQuery({ ...base, granularity: name, time_range: range }, NOW)).not.toThrow();
    }
    for (const { name, value_type } of ANALYTICS_CATALOGUE.operators) {
      const value = value_type === 'array' ? ['a'] : 'a';
      expect(() => parseAnalyticsQuery({ ...base, filters: [{ field: 'model', operator: name, value }] }, NOW)).not.toThrow();
    }
  });

  it.each([
    ['a body that is not an object', [], 'body must be a JSON object'],
    ['null', null, 'body must be a JSON object'],
    ['an unknown field', { ...base, sort: 'x' }, 'unknown field: sort'],
    ['an unknown nested field', { ...base, time_range: { ...RANGE, zone: 'UTC' } }, 'unknown field: time_range.zone'],
    ['no metrics', {}, 'metrics: '],
    ['an empty metric list', { metrics: [] }, 'metrics: name at least one metric'],
    ['metrics that are not a list', { metrics: 'run_count' }, 'metrics: '],
    ['an unknown metric', { metrics: ['run_count', 'cost'] }, 'metrics[1]: unknown metric "cost"'],
    ['a metric twice', { metrics: ['run_count', 'run_count'] }, 'metrics: "run_count" is named twice'],
    ['an unknown dimension', { ...base, dimensions: ['model; DROP TABLE analytics.run_facts'] }, 'dimensions[0]: unknown dimension "model; DROP TABLE analytics.run_facts"'],
    ['three dimensions', { ...base, dimensions: ['model', 'intern', 'user'] }, 'dimensions: at most 2 dimensions'],
    ['a dimension twice', { ...base, dimensions: ['model', 'model'] }, 'dimensions: "model" is named twice'],
    ['21 filters', { ...base, filters: Array.from({ length: 21 }, () => ({ field: 'model', operator: 'eq', value: 'x' })) }, 'filters: at most 20 filters'],
    ['a filter on an unknown field', { ...base, filters: [{ field: 'tokens', operator: 'eq', value: 1 }] }, 'filters[0].field: unknown filter field "tokens"'],
    ['an unknown operator', { ...base, filters: [{ field: 'model', operator: 'like', value: 'x' }] }, 'filters[0].operator: unknown operator "like"'],
    ['a list for a scalar operator', { ...base, filters: [{ field: 'model', operator: 'eq', value: ['x'] }] }, 'filters[0].value: operator "eq" takes one string or number'],
    ['one value for a list operator', { ...base, filters: [{ field: 'model', operator: 'in', value: 'x' }] }, 'filters[0].value: operator "in" takes a non-empty list of strings or numbers'],
    ['an empty list', { ...base, filters: [{ field: 'model', operator: 'not_in', value: [] }] }, 'filters[0].value: operator "not_in" takes a non-empty list'],
    ['a boolean value', { ...base, filters: [{ field: 'model', operator: 'eq', value: true }] }, 'filters[0].value: '],
    ['a missing value', { ...base, filters: [{ field: 'model', operator: 'eq' }] }, 'filters[0].value: '],
    ['an unknown filter key', { ...base, filters: [{ field: 'model', operator: 'eq', value: 'x', negate: true }] }, 'unknown field: filters[0].negate'],
    ['include_unset not a boolean', { ...base, filters: [{ field: 'model', operator: 'eq', value: 'x', include_unset: 'yes' }] }, 'filters[0].include_unset: '],
    ['an unknown granularity', { ...base, granularity: 'year' }, 'granularity: unknown granularity "year"'],
    ['minute over more than 3 hours', { ...base, granularity: 'minute', time_range: { start: '2030-01-01T00:00:00Z', end: '2030-01-01T03:00:01Z' } }, 'granularity: minute needs a time_range of 3 hours or less'],
    ['minute over the default 24 hours', { ...base, granularity: 'minute' }, 'granularity: minute needs a time_range of 3 hours or less'],
    ['a time range without seconds', { ...base, time_range: { start: '2030-01-01T00:00Z', end: RANGE.end } }, 'time_range.start: must be an ISO 8601 UTC timestamp with seconds'],
    ['a time range in another zone', { ...base, time_range: { start: RANGE.start, end: '2030-01-02T00:00:00+01:00' } }, 'time_range.end: must be an ISO 8601 UTC timestamp'],
    ['a date only', { ...base, time_range: { start: '2030-01-01', end: RANGE.end } }, 'time_range.start: '],
    ['a day the calendar lacks', { ...base, time_range: { start: '2030-02-30T00:00:00Z', end: '2030-03-05T00:00:00Z' } }, 'time_range.start: "2030-02-30T00:00:00Z" is not a valid UTC date and time'],
    ['a time range missing its end', { ...base, time_range: { start: RANGE.start } }, 'time_range.end: '],
    ['start after end', { ...base, time_range: { start: RANGE.end, end: RANGE.start } }, 'time_range: start must be before end'],
    ['start equal to end', { ...base, time_range: { start: RANGE.start, end: RANGE.start } }, 'time_range: start must be before end'],
    ['order_by a metric not requested', { ...base, order_by: { field: 'tokens_total', direction: 'desc' } }, 'order_by.field: "tokens_total" is not a requested metric or dimension'],
    ['order_by a dimension not requested', { ...base, dimensions: ['model'], order_by: { field: 'intern', direction: 'desc' } }, 'order_by.field: "intern" is not a requested'],
    ['order_by date without granularity', { ...base, order_by: { field: 'date', direction: 'asc' } }, 'order_by.field: "date" is not a requested metric or dimension (date needs a granularity)'],
    ['order_by a bad direction', { ...base, order_by: { field: 'run_count', direction: 'up' } }, 'order_by.direction: must be "asc" or "desc"'],
    ['order_by without direction', { ...base, order_by: { field: 'run_count' } }, 'order_by.direction: '],
    ['limit 0', { ...base, limit: 0 }, 'limit: limit must be an integer 1-10000'],
    ['limit 10001', { ...base, limit: 10001 }, 'limit: limit must be an integer 1-10000'],
    ['a fractional limit', { ...base, limit: 1.5 }, 'limit: limit must be an integer 1-10000'],
    ['a limit as text', { ...base, limit: '10' }, 'limit: limit must be an integer 1-10000'],
    ['group_limit 0', { ...base, group_limit: 0 }, 'group_limit: group_limit must be an integer 1-10000'],
    ['group_limit 10001', { ...base, group_limit: 10001 }, 'group_limit: group_limit must be an integer 1-10000'],
  ])('refuses %s', (_label, body, message) => {
    expect(refusal(body)).toContain(message);
  });

  it('bounds filter values', () => {
    const long = 'x'.repeat(ANALYTICS_QUERY_LIMITS.maxValueChars + 1);
    expect(refusal({ ...base, filters: [{ field: 'model', operator: 'eq', value: long }] })).toContain('filters[0].value');
    const many = Array.from({ length: ANALYTICS_QUERY_LIMITS.maxFilterValues + 1 }, (_, i) => i);
    expect(refusal({ ...base, filters: [{ field: 'model', operator: 'in', value: many }] })).toContain('filters[0].value');
  });

  it('allows minute buckets over exactly 3 hours', () => {
    const range = { start: '2030-01-01T00:00:00Z', end: '2030-01-01T03:00:00Z' };
    expect(parseAnalyticsQuery({ ...base, granularity: 'minute', time_range: range }, NOW).granularity).toBe('minute');
  });

  it('has a JSON Schema for the API document', () => {
    expect(() => JSON.stringify(analyticsQuerySchema.toJSONSchema({ io: 'input' }))).not.toThrow();
  });
});
