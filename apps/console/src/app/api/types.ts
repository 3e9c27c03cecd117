/** The resources of the interface as the console reads them (docs/interface.md; the served OpenAPI document is exact). */

export type InternStatus =
  | 'stopped'
  | 'queued'
  | 'awaiting_chatapp_install'
  | 'provisioning'
  | 'running'
  | 'failed'
  | 'destroying'
  | 'destroy_failed';

export interface Progress {
  step_label: string;
  step_number: number;
  total_steps: number;
}

export interface Intern {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string | null;
  status: InternStatus;
  last_failure_message: string | null;
  progress: Progress | null;
  hostname: string | null;
  workspace_id: string;
  vault_id: string | null;
  attached_vault_id: string | null;
  created_at: string;
  updated_at: string;
  icon_sha256?: string | null;
  created_by_you?: boolean;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor?: string;
}

export interface PermissionArguments {
  kind: 'permission';
  operation: string;
  options: string[];
}

export interface ElicitationField {
  name: string;
  type: string;
  required: boolean;
}

export interface ElicitationArguments {
  kind: 'elicitation';
  message: string;
  fields: ElicitationField[];
}

export type QuestionArguments = PermissionArguments | ElicitationArguments;

export type RunStatus = 'running' | 'awaiting_input' | 'completed' | 'failed' | 'cancelled' | 'expired';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface Run {
  id: string;
  intern_id: string;
  session_id: string;
  origin: 'chat' | 'invoke';
  status: RunStatus;
  finish_reason: string | null;
  model: string;
  usage: Usage | null;
  open_question: { tool_call_id: string; arguments: QuestionArguments; expires_at: string } | null;
  created_at: string;
  ended_at: string | null;
}

export interface OpenQuestion {
  run_id: string;
  session_id: string;
  tool_call_id: string;
  arguments: QuestionArguments;
  expires_at: string;
}

export interface FileEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  modified_at: string;
}

export interface Directory {
  data: FileEntry[];
  truncated: boolean;
}

export interface Secret {
  name: string;
  hosts: string[] | null;
  fingerprint: string | null;
  created_at: string;
}

export interface EgressPolicy {
  allow: string[];
}

export interface EgressLogEntry {
  id: string;
  at: string;
  run_id: string | null;
  host: string;
  port: number;
  method: string | null;
  path: string | null;
  decision: 'allowed' | 'denied';
  reason: string | null;
  secrets: string[];
  status: number | null;
  bytes_out: number;
  bytes_in: number;
}

export const WEBHOOK_EVENT_TYPES = ['intern.status_changed', 'run.completed', 'run.failed', 'question.opened'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface Webhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  created_at: string;
  /** Only in the answer to its creation. */
  secret?: string;
}

export interface Delivery {
  id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export interface AnalyticsRow {
  date?: string;
  [metricOrDimension: string]: string | number | undefined;
}

export interface AnalyticsAnswer {
  data: { data: AnalyticsRow[]; metadata: { query_time_ms: number; row_count: number; truncated: boolean } };
}
