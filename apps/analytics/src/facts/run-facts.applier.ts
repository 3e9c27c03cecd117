import type { EntityManager } from 'typeorm';
import type { EventData, ReceivedEvent } from './integration-event';
import type { FactsApplierOf } from './fact-applier';

/**
 * The run's row, created by the first event of the run that arrives (whichever it is: each carries the run's
 * intern, session and origin) with its intern's workspace when known; an intern created later fills it in.
 */
async function ensureRun(manager: EntityManager, data: EventData): Promise<string> {
  const runId = data.string('run_id');
  await manager.query(
    `INSERT INTO analytics.run_facts (run_id, session_id, intern_id, origin, workspace_id, organization_id)
     SELECT $1, $2, $3, $4, i.workspace_id, i.organization_id
       FROM (SELECT $3::text AS intern_id) x
       LEFT JOIN analytics.intern_facts i ON i.intern_id = x.intern_id
     ON CONFLICT (run_id) DO NOTHING`,
    [runId, data.string('session_id'), data.string('intern_id'), data.nullableString('origin')],
  );
  return runId;
}

/** `set` refers to the values from $3 on; $2 is the event's origin, kept when it has none (prompt joined). */
async function updateRun(manager: EntityManager, data: EventData, set: string, values: unknown[]): Promise<void> {
  const runId = await ensureRun(manager, data);
  await manager.query(`UPDATE analytics.run_facts SET origin = COALESCE($2, origin), ${set} WHERE run_id = $1`, [
    runId,
    data.nullableString('origin'),
    ...values,
  ]);
}

/** Tokens of a run's end: the run's whole usage, null when the model reported none. */
function tokens(data: EventData): [number | null, number | null] {
  const usage = data.nullableRecord('usage');
  return usage === null ? [null, null] : [usage.integer('prompt_tokens'), usage.integer('completion_tokens')];
}

async function runStarted(manager: EntityManager, event: ReceivedEvent, data: EventData): Promise<void> {
  await updateRun(
    manager,
    data,
    'user_id = $3, api_key_id = $4, model = $5, approval_mode = $6, started_at = $7, prompt_count = prompt_count + 1',
    [data.nullableString('user_id'), data.nullableString('api_key_id'), data.string('model'), data.nullableString('approval_mode'), event.created_at],
  );
}

async function promptJoined(manager: EntityManager, _event: ReceivedEvent, data: EventData): Promise<void> {
  await updateRun(manager, data, 'prompt_count = prompt_count + 1', []);
}

async function runFinished(manager: EntityManager, event: ReceivedEvent, data: EventData): Promise<void> {
  const error = data.nullableRecord('error');
  await updateRun(
    manager,
    data,
    'finish_reason = $3, error_reason = $4, ended_at = $5, prompt_tokens = $6, completion_tokens = $7',
    [data.string('finish_reason'), error === null ? null : error.nullableString('reason'), event.created_at, ...tokens(data)],
  );
}

async function runCancelled(manager: EntityManager, event: ReceivedEvent, data: EventData): Promise<void> {
  await updateRun(
    manager,
    data,
    "finish_reason = 'cancelled', cancel_reason = $3, ended_at = $4, prompt_tokens = $5, completion_tokens = $6",
    [data.nullableString('reason'), event.created_at, ...tokens(data)],
  );
}

/**
 * Runs' integration events into `run_facts`. Each column is written by one kind of event only (or counted,
 * for prompts), so the order of arrival does not matter. Questions are nothing analytics counts (yet).
 */
export const RUN_FACTS_APPLIERS: FactsApplierOf<'run.started' | 'run.prompt_joined' | 'run.completed' | 'run.failed' | 'run.cancelled'> = {
  'run.started': runStarted,
  'run.prompt_joined': promptJoined,
  'run.completed': runFinished,
  'run.failed': runFinished,
  'run.cancelled': runCancelled,
};
