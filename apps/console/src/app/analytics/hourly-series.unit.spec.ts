import { HOUR_MS, hourlySeries, last24Hours, total } from './hourly-series';

describe('the last 24 hours, hour by hour', () => {
  const now = Date.parse('2030-01-02T10:20:30.456Z');
  const range = last24Hours(now);

  it('starts at the hour 24 h back and names both ends in whole seconds', () => {
    expect(range).toEqual({ start: '2030-01-01T10:00:00Z', end: '2030-01-02T10:20:30Z' });
  });

  it('has a point for every hour, the answered ones with their numbers and quiet hours at 0', () => {
    const points = hourlySeries(
      [
        { date: '2030-01-01T12:00:00.000Z', run_count: 3, tokens_total: 40 },
        { date: '2030-01-02T10:00:00.000Z', run_count: 1 },
      ],
      ['run_count', 'tokens_total'],
      range,
    );
    expect(points).toHaveLength(25);
    expect(points[2]).toMatchObject({ run_count: 3, tokens_total: 40 });
    expect(points[24]).toMatchObject({ run_count: 1, tokens_total: 0 });
    expect(points[0]).toMatchObject({ run_count: 0, tokens_total: 0 });
    expect(total(points, 'run_count')).toBe(4);
    expect((Date.parse(range.end) - Date.parse(range.start)) / HOUR_MS).toBeGreaterThan(24);
  });
});
