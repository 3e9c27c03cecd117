import type { InternEndsRunsReason } from './session-messages';
import type { RequestContext } from './principal';

export const INTERN_STATUSES = [
  'stopped',
  'queued',
  'awaiting_chatapp_install',
  'provisioning',
  'running',
  'failed',
  'destroying',
  'destroy_failed',
] as const;
export type InternStatus = (typeof INTERN_STATUSES)[number];

export interface InternProgress {
  step_label: string;
  step_number: number;
  total_steps: number;
}

/** The Intern resource of CONTRACT section 3: every key present, nullable ones as explicit null. */
export interface InternView {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string | null;
  status: InternStatus;
  last_failure_message: string | null;
  progress: InternProgress | null;
  hostname: string | null;
  workspace_id: string;
  vault_id: string;
  attached_vault_id: string | null;
  created_at: string;
  updated_at: string;
  /** On list and get only. */
  icon_sha256?: string | null;
  /** On list and get only, and only when the credential acts for a member. */
  created_by_you?: boolean;
}

export interface InternList {
  data: InternView[];
  has_more: boolean;
  next_cursor?: string;
}

export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 500;
export const LIST_MAX_STATUS_ITEMS = 8;

// ---- request payloads sent by the gateway to lifecycle ----

export interface CreateInternBody {
  name: string;
  description?: string | null;
  instructions?: string | null;
  model?: string | null;
  provision?: boolean;
  vault_id?: string;
  workspace_id?: string;
}

export interface UpdateInternBody {
  name?: string;
  description?: string | null;
  instructions?: string | null;
  model?: string | null;
}

export interface CreateInternRequest {
  context: RequestContext;
  body: CreateInternBody;
  idempotencyKey: string | null;
}

export interface CreateInternReply {
  /** true when an Idempotency-Key replayed a finished create (HTTP 200 instead of 201). */
  replayed: boolean;
  intern: InternView;
}

export interface UpdateInternRequest {
  context: RequestContext;
  internId: string;
  body: UpdateInternBody;
}

export interface GetInternRequest {
  context: RequestContext;
  internId: string;
}

export interface ListInternsRequest {
  context: RequestContext;
  limit: number;
  statuses: InternStatus[] | null;
  startingAfter: string | null;
  workspaceId: string | null;
}

export interface InternOwnerRequest {
  internId: string;
}

export interface InternOwnerReply {
  internId: string;
  organizationId: string;
  workspaceId: string;
}

export interface InternCommandRequest {
  context: RequestContext;
  internId: string;
}

export type ProvisionInternRequest = InternCommandRequest;
export type SuspendInternRequest = InternCommandRequest;

export interface DeleteInternBody {
  acknowledge_workspace_loss?: boolean;
}

export interface DeleteInternRequest extends InternCommandRequest {
  body: DeleteInternBody;
}

export type InternIconRequest = InternCommandRequest;

export interface InternIconReply {
  sha256: string;
  /** The PNG bytes, base64. */
  pngBase64: string;
}

export interface RecordChatappInstallRequest {
  workspaceId: string;
  correlationId: string;
}

export interface RecordChatappInstallReply {
  workspaceId: string;
  /** Interns that left `awaiting_chatapp_install` because of this install. */
  released: number;
}

// ---- the runtime driver (lifecycle -> runs) ----

export interface RuntimeRequest {
  internId: string;
  correlationId: string;
}

export interface RuntimeEndRunsRequest extends RuntimeRequest {
  /** Why the intern ends its runs; told to clients as 410 `run_ended`. */
  reason: InternEndsRunsReason;
}

export interface RuntimeBootRequest extends RuntimeRequest {
  /** The intern's model, or null for DEFAULT_MODEL. */
  model: string | null;
  hostname: string;
}

export interface RuntimeArchiveResult {
  /** Where the workspace archive was written (absolute path), or null when there was no workspace. */
  archivePath: string | null;
}

export interface RuntimeHealthReply {
  healthy: boolean;
  detail: string;
}

/**
 * A runtime step's answer. `ok: false` is a definitive failure of the step (the intern goes to `failed`
 * or `destroy_failed` with `message`); a missing or late answer is transient and the step is retried.
 */
export type RuntimeStepReply<T = Record<never, never>> = ({ ok: true } & T) | { ok: false; message: string };
