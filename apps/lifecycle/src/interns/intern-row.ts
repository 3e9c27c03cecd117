import type { InternProgress, InternStatus, InternView, Principal } from '@interns/contracts';

/** One row of the `lifecycle.interns` read model as pg returns it. */
export interface InternRow {
  id: string;
  organization_id: string;
  workspace_id: string;
  created_by: string | null;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string | null;
  status: InternStatus;
  last_failure_message: string | null;
  progress: InternProgress | null;
  hostname: string | null;
  vault_id: string;
  attached_vault_id: string | null;
  icon_sha256: string | null;
  /** ISO 8601 in UTC with milliseconds, as the API shows it (formatted by PostgreSQL: see INTERN_COLUMNS). */
  created_at: string;
  updated_at: string;
  revision: number;
}

/** A timestamptz as JavaScript's `toISOString()` writes it (milliseconds, truncated like a Date's). */
const isoTimestamp = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;

/**
 * The columns of an InternRow. Timestamps come formatted: no Date is parsed and printed again per row and
 * field on the hot reads.
 */
export const INTERN_COLUMNS = `id, organization_id, workspace_id, created_by, name, description, instructions, model,
  status, last_failure_message, progress, hostname, vault_id, attached_vault_id, icon_sha256,
  ${isoTimestamp('created_at')}, ${isoTimestamp('updated_at')}, revision`;

/**
 * The Intern resource. `detailed` (list and get) adds `icon_sha256`, and `created_by_you` when the
 * credential acts for a member.
 */
export function toInternView(row: InternRow, principal: Principal, detailed: boolean): InternView {
  const view: InternView = {
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    model: row.model,
    status: row.status,
    last_failure_message: row.last_failure_message,
    progress: row.progress,
    hostname: row.hostname,
    workspace_id: row.workspace_id,
    vault_id: row.vault_id,
    attached_vault_id: row.attached_vault_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
  if (detailed) {
    view.icon_sha256 = row.icon_sha256;
    if (principal.memberId !== null) view.created_by_you = row.created_by === principal.memberId;
  }
  return view;
}
