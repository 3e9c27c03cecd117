import type { Question, RunOpenQuestion, RunResource } from '@interns/contracts';
import type { RunOrigin, RunStatus } from '@interns/contracts';

/** The columns of `runs.runs` a Run shows. */
export const RUN_COLUMNS = `id, intern_id, session_id, origin, status, finish_reason, model, usage_reported,
  prompt_tokens, completion_tokens, open_question, started_at, ended_at, caller_id, approval_mode, transcript_purged_at`;

export interface RunRow {
  id: string;
  intern_id: string;
  session_id: string;
  origin: RunOrigin;
  status: RunStatus;
  finish_reason: RunResource['finish_reason'];
  model: string;
  usage_reported: boolean;
  prompt_tokens: number;
  completion_tokens: number;
  open_question: RunOpenQuestion | null;
  started_at: Date;
  ended_at: Date | null;
  caller_id: string;
  approval_mode: string;
  /** When TRANSCRIPT_RETENTION_MS or its intern's deletion purged its transcript; null while it is kept. */
  transcript_purged_at: Date | null;
}

export function toRunResource(row: RunRow): RunResource {
  return {
    id: row.id,
    intern_id: row.intern_id,
    session_id: row.session_id,
    origin: row.origin,
    status: row.status,
    finish_reason: row.finish_reason,
    model: row.model,
    usage: row.usage_reported
      ? { prompt_tokens: row.prompt_tokens, completion_tokens: row.completion_tokens, total_tokens: row.prompt_tokens + row.completion_tokens }
      : null,
    open_question: row.open_question === null ? null : { ...row.open_question, arguments: row.open_question.arguments as Question },
    created_at: row.started_at.toISOString(),
    ended_at: row.ended_at?.toISOString() ?? null,
  };
}
