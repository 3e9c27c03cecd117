import { MigrationInterface, QueryRunner } from 'typeorm';

const GRANULARITIES = ['minute', 'hour', 'day', 'week', 'month'] as const;

/**
 * What `POST /analytics/query` needs to stay fast over millions of run facts (`npm run bench:analytics`, figures in
 * bench/README.md):
 *
 * - every query reads one organization's runs over a time range: an index on (organization_id, started_at), so a
 *   small organization does not scan every organization's runs of the range. It includes the columns the metrics
 *   read (not the dimensions), so totals and time series over any range are index-only scans; queries grouped or
 *   filtered by a dimension read the table for the rows the index finds.
 * - statistics on each granularity's bucket expression: without them the planner assumes every run is a bucket of
 *   its own and sorts all the runs of the range to group them; with them it hashes into the few hundred buckets
 *   there are (the 31-day hourly query of the largest organization: about 95 -> 45 ms). They are filled by the
 *   next ANALYZE (autovacuum's, as the table grows). The migration runs none itself: analyzing a table that is
 *   still empty makes the planner trust "no rows" and scan it whole, and a whole-table scan under the appliers'
 *   SERIALIZABLE transactions locks the whole table's predicate, so concurrent appliers fail far more often.
 */
export class RunFactsQueryIndex1764000000000 implements MigrationInterface {
  name = 'RunFactsQueryIndex1764000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(
      `CREATE INDEX run_facts_organization_started_idx ON analytics.run_facts (organization_id, started_at)
         INCLUDE (prompt_count, prompt_tokens, completion_tokens, latency_ms, finish_reason)`,
    );
    for (const granularity of GRANULARITIES) {
      await runner.query(
        `CREATE STATISTICS analytics.run_facts_${granularity}_bucket_stats
           ON (date_trunc('${granularity}', started_at, 'UTC')) FROM analytics.run_facts`,
      );
    }
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const granularity of GRANULARITIES) await runner.query(`DROP STATISTICS analytics.run_facts_${granularity}_bucket_stats`);
    await runner.query('DROP INDEX analytics.run_facts_organization_started_idx');
  }
}
