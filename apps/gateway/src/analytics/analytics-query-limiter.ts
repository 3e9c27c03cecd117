import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { type BudgetVerdict, MinuteBudget } from '../auth/minute-limiter';

/** Created by the identity migration CreateAnalyticsQueryLimits1766000000000. */
const TABLE_NAME = 'analytics_query_limits';

/**
 * CONTRACT section 22: analytics queries per organization per fixed minute (ANALYTICS_QUERIES_PER_MINUTE), so
 * one organization cannot hold the analytics service's connections and statement time that all share.
 */
export class AnalyticsQueryLimiter {
  private readonly budget: MinuteBudget;

  constructor(options: { dataSource: DataSource; queriesPerMinute: number }) {
    this.budget = new MinuteBudget({
      dataSource: options.dataSource,
      tableName: TABLE_NAME,
      perMinute: options.queriesPerMinute,
      name: 'ANALYTICS_QUERIES_PER_MINUTE',
    });
  }

  consume(organizationId: string): Promise<BudgetVerdict> {
    return this.budget.consume(createHash('sha256').update(organizationId).digest('base64url'));
  }
}
