import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';

/**
 * Run facts written straight into `analytics.run_facts`, for the query's tests: the appliers' own tests cover how
 * events become facts; a query test needs exact start times, tokens and latencies.
 */
export interface RunFactSpec {
  organization: string | null;
  /** ISO 8601; null: the run's start has not arrived. */
  startedAt: string | null;
  model?: string | null;
  intern?: string;
  workspace?: string | null;
  user?: string | null;
  apiKey?: string | null;
  origin?: 'chat' | 'invoke';
  /** null: still going (no end, no tokens). */
  finish?: 'stop' | 'length' | 'error' | 'cancelled' | null;
  promptTokens?: number | null;
  completionTokens?: number | null;
  latencyMs?: number;
  prompts?: number;
}

export async function insertRunFacts(dataSource: DataSource, facts: RunFactSpec[]): Promise<void> {
  for (const fact of facts) {
    const finish = fact.finish === undefined ? 'stop' : fact.finish;
    const endedAt =
      finish === null || fact.startedAt === null ? null : new Date(Date.parse(fact.startedAt) + (fact.latencyMs ?? 1000)).toISOString();
    await dataSource.query(
      `INSERT INTO analytics.run_facts (run_id, session_id, intern_id, workspace_id, organization_id, user_id, api_key_id,
         origin, model, approval_mode, prompt_count, finish_reason, error_reason, prompt_tokens, completion_tokens,
         started_at, ended_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'manual', $10, $11, $12, $13, $14, $15, $16)`,
      [
        randomUUID(),
        randomUUID(),
        fact.intern ?? randomUUID(),
        fact.workspace === undefined ? 'ws-main' : fact.workspace,
        fact.organization,
        fact.user === undefined ? 'alice' : fact.user,
        fact.apiKey ?? null,
        fact.origin ?? 'chat',
        fact.model === undefined ? 'local/scripted' : fact.model,
        fact.prompts ?? 1,
        finish,
        finish === 'error' ? 'model_unavailable' : null,
        finish === null ? null : (fact.promptTokens ?? null),
        finish === null ? null : (fact.completionTokens ?? null),
        fact.startedAt,
        endedAt,
      ],
    );
  }
}

/**
 * The query tests' runs, 2030-01-01 (a Tuesday) and the next day, for organization `acme`; `globex` has one big
 * run in the same hour, and two runs count nowhere (intern not known yet; start not arrived).
 *
 * | run | started (UTC)            | model | intern | user  | api key | origin | finish    | tokens | latency | prompts |
 * | r1  | 01-01 10:15:00           | m-a   | i-1    | alice |         | chat   | stop      | 10/5   | 1000    | 1       |
 * | r2  | 01-01 10:45:00           | m-a   | i-1    | bob   |         | chat   | error     | -      | 500     | 2       |
 * | r3  | 01-01 11:00:00           | m-b   | i-2    | -     | 42      | invoke | stop      | 20/10  | 2000    | 1       |
 * | r4  | 01-01 23:59:59.999       | m-b   | i-2    | alice |         | chat   | cancelled | 1/1    | 100     | 1       |
 * | r5  | 01-02 00:00:00           | m-a   | i-2    | alice |         | chat   | (going)   | -      | -       | 1       |
 * | r6  | 01-05 12:00:00           | m-a   | i-1    | alice |         | chat   | stop      | 1/1    | 1000    | 1       |
 */
export const ACME = 'acme';
export const GLOBEX = 'globex';
/** Holds r1-r5. */
export const QUERY_RANGE = { start: '2030-01-01T00:00:00Z', end: '2030-01-03T00:00:00Z' };

export const QUERY_FACTS: RunFactSpec[] = [
  { organization: ACME, startedAt: '2030-01-01T10:15:00.000Z', model: 'm-a', intern: 'i-1', user: 'alice', promptTokens: 10, completionTokens: 5, latencyMs: 1000 },
  { organization: ACME, startedAt: '2030-01-01T10:45:00.000Z', model: 'm-a', intern: 'i-1', user: 'bob', finish: 'error', latencyMs: 500, prompts: 2 },
  {
    organization: ACME, startedAt: '2030-01-01T11:00:00.000Z', model: 'm-b', intern: 'i-2', user: null, apiKey: '42', origin: 'invoke',
    promptTokens: 20, completionTokens: 10, latencyMs: 2000,
  },
  {
    organization: ACME, startedAt: '2030-01-01T23:59:59.999Z', model: 'm-b', intern: 'i-2', user: 'alice', finish: 'cancelled',
    promptTokens: 1, completionTokens: 1, latencyMs: 100,
  },
  { organization: ACME, startedAt: '2030-01-02T00:00:00.000Z', model: 'm-a', intern: 'i-2', user: 'alice', finish: null },
  { organization: ACME, startedAt: '2030-01-05T12:00:00.000Z', model: 'm-a', intern: 'i-1', user: 'alice', promptTokens: 1, completionTokens: 1 },
  { organization: GLOBEX, startedAt: '2030-01-01T10:30:00.000Z', model: 'm-a', intern: 'i-9', user: 'zoe', promptTokens: 1000, completionTokens: 1000 },
  { organization: null, startedAt: '2030-01-01T10:30:00.000Z', model: 'm-a', intern: 'i-unknown', promptTokens: 7, completionTokens: 7 },
  { organization: ACME, startedAt: null, model: 'm-a', intern: 'i-1', finish: null },
];
