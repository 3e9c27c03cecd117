import { performance } from 'node:perf_hooks';
import type { DataSource } from 'typeorm';
import {
  type AnalyticsQuery,
  type AnalyticsQueryReply,
  type AnalyticsRow,
  parseAnalyticsQuery,
} from '@interns/contracts';
import { type AnalyticsSql, buildAnalyticsSql } from './analytics-query.builder';

type ResultRow = Record<string, unknown>;

/** A result row under the client's names: dimensions as text or null, `date` as ISO 8601, metrics as numbers. */
function toRow(row: ResultRow, columns: AnalyticsSql['columns']): AnalyticsRow {
  const out: AnalyticsRow = {};
  for (const { alias, key, kind } of columns) {
    const value = row[alias];
    if (kind === 'metric') out[key] = value === null || value === undefined ? 0 : Number(value);
    else if (kind === 'date') out[key] = value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString();
    else out[key] = value === null || value === undefined ? null : String(value);
  }
  return out;
}

/**
 * Answers `analytics.qry.query`: checks the query again (the service trusts no message for what reaches its SQL;
 * the gateway has answered the client's 400s already), runs the SQL built from the catalogue over the key's
 * organization's run facts, and reports whether the limit cut rows.
 */
export class AnalyticsQueries {
  constructor(private readonly dataSource: DataSource) {}

  /** `request` as it came over NATS: `{organizationId, query}`. */
  async answer(request: unknown): Promise<AnalyticsQueryReply> {
    const { organizationId, query } = this.read(request);
    return this.run(query, organizationId);
  }

  async run(query: AnalyticsQuery, organizationId: string): Promise<AnalyticsQueryReply> {
    const sql = buildAnalyticsSql(query, organizationId);
    const started = performance.now();
    const rows: ResultRow[] = await this.dataSource.query(sql.text, sql.values);
    const truncated = rows.length > sql.limit;
    const data = rows.slice(0, sql.limit).map((row) => toRow(row, sql.columns));
    const queryTimeMs = Math.round((performance.now() - started) * 1000) / 1000;
    return { data: { data, metadata: { query_time_ms: queryTimeMs, row_count: data.length, truncated } } };
  }

  private read(request: unknown): { organizationId: string; query: AnalyticsQuery } {
    const { organizationId, query } = (typeof request === 'object' && request !== null ? request : {}) as Record<string, unknown>;
    // Only a broken gateway sends this: an internal error, not the client's 400.
    if (typeof organizationId !== 'string' || organizationId === '') throw new Error('analytics query without an organization');
    return { organizationId, query: parseAnalyticsQuery(query) };
  }
}
