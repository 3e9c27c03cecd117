import type { AnalyticsRow } from '../api/types';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** The last 24 h as the query's `time_range` (ISO 8601 UTC with seconds, no fraction), from the start of an hour. */
export function last24Hours(now: number): { start: string; end: string } {
  const start = Math.floor((now - DAY_MS) / HOUR_MS) * HOUR_MS;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { start: iso(start), end: iso(now) };
}

/** One hour's numbers, every metric present (0 where no row was answered). */
export interface HourPoint {
  hour: string;
  [metric: string]: number | string;
}

/**
 * Rows with `date` (an hour's start) into one point per hour from `start` to `end`: the API answers only hours that
 * had runs, a chart needs the quiet hours too.
 */
export function hourlySeries(rows: readonly AnalyticsRow[], metrics: readonly string[], range: { start: string; end: string }): HourPoint[] {
  const byHour = new Map<number, AnalyticsRow>();
  for (const row of rows) if (row.date !== undefined) byHour.set(Math.floor(Date.parse(row.date) / HOUR_MS) * HOUR_MS, row);
  const points: HourPoint[] = [];
  for (let hour = Date.parse(range.start); hour <= Date.parse(range.end); hour += HOUR_MS) {
    const row = byHour.get(hour);
    const point: HourPoint = { hour: new Date(hour).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' }) };
    for (const metric of metrics) {
      const value = row?.[metric];
      point[metric] = typeof value === 'number' ? value : 0;
    }
    points.push(point);
  }
  return points;
}

export function total(points: readonly HourPoint[], metric: string): number {
  return points.reduce((sum, point) => sum + (typeof point[metric] === 'number' ? (point[metric] as number) : 0), 0);
}
