import { ANALYTICS_CATALOGUE } from './analytics';

const TITLE_CASE = /^(?:[A-Z][A-Za-z]*|API)(?: (?:[A-Z][A-Za-z]*|API))*$/;

describe('analytics catalogue', () => {
  const lists = Object.entries(ANALYTICS_CATALOGUE) as [string, { name: string }[]][];

  it.each(lists)('%s have unique names', (_list, entries) => {
    const names = entries.map((entry) => entry.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('labels everything in Title Case', () => {
    const labelled = [...ANALYTICS_CATALOGUE.dimensions, ...ANALYTICS_CATALOGUE.granularities, ...ANALYTICS_CATALOGUE.metrics];
    for (const entry of labelled) expect(entry.display_label).toMatch(TITLE_CASE);
  });

  it('holds what CONTRACT section 9 requires', () => {
    const names = (entries: { name: string }[]) => entries.map((entry) => entry.name);
    expect(names(ANALYTICS_CATALOGUE.granularities)).toEqual(['minute', 'hour', 'day', 'week', 'month']);
    expect(ANALYTICS_CATALOGUE.operators).toEqual([
      ...['eq', 'neq', 'gt', 'gte', 'lt', 'lte'].map((name) => ({ name, value_type: 'scalar' })),
      ...['in', 'not_in'].map((name) => ({ name, value_type: 'array' })),
    ]);
    expect(names(ANALYTICS_CATALOGUE.dimensions)).toEqual(
      expect.arrayContaining(['model', 'intern', 'workspace', 'api_key_id', 'user', 'origin', 'finish_reason']),
    );
    expect(names(ANALYTICS_CATALOGUE.metrics)).toEqual(
      expect.arrayContaining(['request_count', 'run_count', 'tokens_prompt', 'tokens_completion', 'tokens_total']),
    );
    const metric = (name: string) => ANALYTICS_CATALOGUE.metrics.find((entry) => entry.name === name);
    expect(metric('avg_latency')).toMatchObject({ display_format: 'latency' });
    expect(metric('error_rate')).toMatchObject({ is_rate: true, display_format: 'percent' });
  });
});
