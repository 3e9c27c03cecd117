import type { DataSource } from 'typeorm';

/**
 * Synthetic run facts for the analytics benchmark, made by PostgreSQL itself (`generate_series`, one INSERT per
 * batch) so a million rows load in seconds. The shape follows what the facts appliers write:
 *
 * - runs spread evenly over `days` days ending at `end`, inserted in start order (as facts arrive in production:
 *   runs are applied as they happen, so the table's physical order follows time);
 * - four organizations of unequal size (40, 30, 20, 10 %), 50 interns each over 3 workspaces, five models;
 * - 80 % chat runs of 20 members per organization, 20 % invokes of 5 organization keys (no user);
 * - finishes: 90 % stop, 5 % error (no usage), 2 % length, 2 % cancelled, 1 % still going (no end, no usage);
 *   1-3 prompts, prompt tokens 50-4049, completion tokens 10-1009, latency 0.2-30 s.
 */
export const SYNTHETIC_ORGANIZATIONS = ['org-big', 'org-large', 'org-medium', 'org-small'] as const;
export const SYNTHETIC_MODELS = ['openai/gpt-4o', 'openai/gpt-4o-mini', 'anthropic/claude-sonnet', 'mistral/large', 'local/scripted'];

/** Independent pseudo-random 0..99 per run and salt: deterministic, so every run of the bench loads the same facts. */
const percentile = (salt: number) => `(hashint8(i * 8 + ${salt}) & 2147483647) % 100`;

const INSERT_BATCH = `
  INSERT INTO analytics.run_facts (run_id, session_id, intern_id, workspace_id, organization_id, user_id, api_key_id, origin,
    model, approval_mode, prompt_count, finish_reason, error_reason, prompt_tokens, completion_tokens, started_at, ended_at)
  SELECT 'run-' || i, 'session-' || (i / 2), 'intern-' || o || '-' || n, 'ws-' || o || '-' || (n % 3), orgs[o + 1],
         CASE WHEN chat THEN 'user-' || o || '-' || (i % 20) END,
         CASE WHEN NOT chat THEN 'key-' || o || '-' || (i % 5) END,
         CASE WHEN chat THEN 'chat' ELSE 'invoke' END,
         models[1 + m], 'manual', 1 + (i % 3),
         finish, CASE WHEN finish = 'error' THEN 'model_unavailable' END,
         CASE WHEN finish IN ('stop', 'length', 'cancelled') THEN 50 + (i * 7919) % 4000 END,
         CASE WHEN finish IN ('stop', 'length', 'cancelled') THEN 10 + (i * 104729) % 1000 END,
         started, CASE WHEN finish IS NOT NULL THEN started + (200 + (i * 31) % 29800) * interval '1 millisecond' END
    FROM (
      SELECT i, $6::text[] AS orgs, $5::text[] AS models,
             CASE WHEN po < 40 THEN 0 WHEN po < 70 THEN 1 WHEN po < 90 THEN 2 ELSE 3 END AS o,
             pn % 50 AS n, pc < 80 AS chat, pm % 5 AS m,
             CASE WHEN pf < 1 THEN NULL WHEN pf < 6 THEN 'error' WHEN pf < 8 THEN 'length' WHEN pf < 10 THEN 'cancelled' ELSE 'stop' END AS finish,
             $3::timestamptz + (i::float8 / $4) * ($7::timestamptz - $3::timestamptz) AS started
        FROM (
          SELECT i, ${percentile(1)} AS po, ${percentile(2)} AS pn, ${percentile(3)} AS pc, ${percentile(4)} AS pm, ${percentile(5)} AS pf
            FROM generate_series($1::bigint, $2::bigint) AS i
        ) draws
    ) runs`;

export interface SyntheticLoad {
  rows: number;
  days: number;
  end: Date;
  /** Rows per INSERT: progress shows between batches, and no statement holds the whole load. */
  batch?: number;
  onProgress?: (inserted: number) => void;
}

/** Inserts `rows` facts, then VACUUM ANALYZE (what autovacuum would have done by the time anyone queries them). */
export async function loadSyntheticFacts(dataSource: DataSource, load: SyntheticLoad): Promise<void> {
  const batch = load.batch ?? 200_000;
  const start = new Date(load.end.getTime() - load.days * 86_400_000);
  for (let first = 0; first < load.rows; first += batch) {
    const last = Math.min(first + batch, load.rows) - 1;
    await dataSource.query(INSERT_BATCH, [
      first,
      last,
      start.toISOString(),
      load.rows,
      SYNTHETIC_MODELS,
      [...SYNTHETIC_ORGANIZATIONS],
      load.end.toISOString(),
    ]);
    load.onProgress?.(last + 1);
  }
  await dataSource.query('VACUUM ANALYZE analytics.run_facts');
}
