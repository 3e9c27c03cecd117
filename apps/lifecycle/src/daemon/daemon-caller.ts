import type { DataSource, EntityManager } from 'typeorm';
import { DomainError, OAUTH_SCOPES, Principal } from '@interns/contracts';
import type { InternRow } from '../interns/intern-row';
import { visibleInternRow } from '../interns/visible-intern';

export interface DaemonCaller {
  row: InternRow;
  /** The member the OAuth token acts for. */
  memberId: string;
}

/**
 * CONTRACT section 8, after the gateway's checks 1-6, in this order: visibility (404, as for get), a personal
 * identity (an OAuth token: API keys are 403 `personal_identity_required`), for signing the `vault:read`
 * scope (403 `insufficient_scope`), and a `running` intern (409 `intern_not_running`).
 */
export async function daemonCaller(
  dataSource: DataSource,
  internId: string,
  principal: Principal,
  needs: { vaultRead: boolean },
): Promise<DaemonCaller> {
  const row = await visibleInternRow(dataSource, internId, principal);
  if (principal.kind !== 'oauth' || principal.memberId === null) {
    throw new DomainError('personal_identity_required', 'daemon access needs a personal OAuth access token, not an API key');
  }
  if (needs.vaultRead && !principal.scopes.includes(OAUTH_SCOPES.vaultRead)) {
    throw new DomainError('insufficient_scope', `the access token lacks the "${OAUTH_SCOPES.vaultRead}" scope`);
  }
  if (row.status !== 'running') throw notRunning();
  return { row, memberId: principal.memberId };
}

/**
 * Inside the recording transaction: the intern is still `running`, and stays so until commit. The shared row
 * lock makes a concurrent suspend or delete (whose projection updates this row) wait for this transaction,
 * so its token revocation runs after, and sees, a token stored here.
 */
export async function lockRunningIntern(manager: EntityManager, internId: string): Promise<void> {
  const rows: { status: string }[] = await manager.query(`SELECT status FROM lifecycle.interns WHERE id = $1 FOR SHARE`, [
    internId,
  ]);
  if (rows[0]?.status !== 'running') throw notRunning();
}

function notRunning(): DomainError {
  return new DomainError('intern_not_running', 'the intern is not running');
}
