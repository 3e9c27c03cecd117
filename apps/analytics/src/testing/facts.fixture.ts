import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  INTEGRATION_EVENT_TYPES,
  type IntegrationEvent,
  type IntegrationEventData,
  type IntegrationEventType,
} from '@interns/contracts';

/** Integration events and facts for analytics' tests: events as the relays publish them, rows as stored. */
export const WORKSPACE = '11111111-1111-4111-8111-111111111111';

export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 8_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Builds integration events as the relays publish them, sequences counted per intern or session. */
export class EventFactory {
  private readonly sequences = new Map<string, number>();

  event<T extends IntegrationEventType>(
    about: string,
    type: T,
    data: IntegrationEventData[T],
    createdAt = '2030-01-01T10:00:00.000Z',
  ): IntegrationEvent<T> {
    const sequence = (this.sequences.get(about) ?? 0) + 1;
    this.sequences.set(about, sequence);
    return {
      id: randomUUID(),
      type,
      version: 1,
      created_at: createdAt,
      workspace_id: INTEGRATION_EVENT_TYPES[type].source === 'lifecycle' ? WORKSPACE : null,
      sequence,
      correlation_id: randomUUID(),
      data,
    } as IntegrationEvent<T>;
  }

  /** A run's events: its start, prompts that joined it, its end. */
  run(options: { internId?: string; user?: string | null; apiKey?: string | null; origin?: 'chat' | 'invoke' } = {}) {
    const sessionId = randomUUID();
    const runId = randomUUID();
    const internId = options.internId ?? randomUUID();
    const origin = options.origin ?? 'chat';
    const ref = { intern_id: internId, run_id: runId, session_id: sessionId };
    return {
      runId,
      sessionId,
      internId,
      ref,
      started: this.event(sessionId, 'run.started', {
        ...ref,
        origin,
        user_id: options.user === undefined ? 'alice' : options.user,
        api_key_id: options.apiKey ?? null,
        model: 'local/scripted',
        approval_mode: 'manual',
      }),
      joined: () => this.event(sessionId, 'run.prompt_joined', ref, '2030-01-01T10:00:00.500Z'),
      completed: (promptTokens: number, completionTokens: number) =>
        this.event(
          sessionId,
          'run.completed',
          {
            ...ref,
            origin,
            finish_reason: 'stop',
            usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
          },
          '2030-01-01T10:00:01.250Z',
        ),
    };
  }

  internCreated(internId: string, extra: Partial<IntegrationEventData['intern.created']> = {}) {
    return this.event(
      internId,
      'intern.created',
      {
        intern_id: internId,
        organization_id: 'acme',
        workspace_id: WORKSPACE,
        created_by: 'alice',
        name: 'helper',
        description: null,
        model: null,
        ...extra,
      },
      '2030-01-01T09:00:00.000Z',
    );
  }
}

export interface RunFactRow {
  run_id: string;
  session_id: string;
  intern_id: string | null;
  workspace_id: string | null;
  organization_id: string | null;
  user_id: string | null;
  api_key_id: string | null;
  origin: string | null;
  model: string | null;
  approval_mode: string | null;
  prompt_count: number;
  finish_reason: string | null;
  error_reason: string | null;
  cancel_reason: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  started_at: Date | null;
  ended_at: Date | null;
  latency_ms: string | null;
}

export async function runFact(dataSource: DataSource, runId: string): Promise<RunFactRow | undefined> {
  const rows: RunFactRow[] = await dataSource.query('SELECT * FROM analytics.run_facts WHERE run_id = $1', [runId]);
  return rows[0];
}

/** How many of these event ids are recorded as applied. */
export async function processed(dataSource: DataSource, eventIds: string[]): Promise<number> {
  const rows: { n: number }[] = await dataSource.query(
    'SELECT count(*)::int AS n FROM analytics.processed_events WHERE event_id = ANY($1::uuid[])',
    [eventIds],
  );
  return rows[0].n;
}

export async function statusChanges(dataSource: DataSource, internId: string): Promise<string[]> {
  const rows: { status: string }[] = await dataSource.query(
    'SELECT status FROM analytics.intern_status_changes WHERE intern_id = $1 ORDER BY stream_version',
    [internId],
  );
  return rows.map((row) => row.status);
}
