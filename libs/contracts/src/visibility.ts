import { callerId, type Principal } from './principal';

/**
 * Who sees what (CONTRACT sections 1 and 12), as one set of rules for every place that decides it: lifecycle for an
 * intern route, runs for its run routes and question inbox, the gateway for the workspace event stream.
 */

/** Whether the principal may see this intern at all (CONTRACT section 1, check 7): its workspace, and an intern key's own intern. */
export function internVisibleTo(intern: { id: string; workspace_id: string }, principal: Principal): boolean {
  if (intern.workspace_id !== principal.workspaceId) return false;
  if (principal.kind === 'intern' && intern.id !== principal.internId) return false;
  return true;
}

/**
 * Which of an intern's runs the caller sees (CONTRACT section 12), once the intern itself is visible to it:
 * organization keys of its workspace and the intern's own keys see all of them; a member (or a user key) only
 * the runs it started. Null: no restriction; else the caller id (`callerId`) a run must have.
 */
export function runViewerOf(principal: Principal): string | null {
  return principal.kind === 'organization' || principal.kind === 'intern' ? null : callerId(principal);
}

/** Who a run's caller is, as `run.started` tells it: `member:<id>` (user keys, OAuth) or `key:<id>` (organization and intern keys). */
export function callerParts(caller: string): { user_id: string | null; api_key_id: string | null } {
  if (caller.startsWith('member:')) return { user_id: caller.slice('member:'.length), api_key_id: null };
  if (caller.startsWith('key:')) return { user_id: null, api_key_id: caller.slice('key:'.length) };
  return { user_id: null, api_key_id: null };
}

/** The caller id `callerParts` was made from; null when neither part is set. */
export function callerOfParts(parts: { user_id?: unknown; api_key_id?: unknown }): string | null {
  if (typeof parts.user_id === 'string') return `member:${parts.user_id}`;
  if (typeof parts.api_key_id === 'string') return `key:${parts.api_key_id}`;
  return null;
}
