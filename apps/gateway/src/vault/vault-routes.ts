import { API_PREFIX } from '../http/api-prefix';
import { decodedPathOf } from '../http/request-path';

export const VAULT_PATH = `${API_PREFIX}/vault`;
/** Path parameter names of the vault routes (the controller declares them so). */
export const VAULT_INTERN_ID_PARAM = 'intern_id';
export const VAULT_NAME_PARAM = 'name';

export interface VaultRoute {
  /** Put, delete and copy: refused with 503 `vault_writes_disabled` while the organization's lifecycle writes are off. */
  write: boolean;
}

/**
 * Whether a request is on a vault route (interface section 18), whose credential rules the admission hook applies:
 * by the matched route's pattern, or by the decoded path when no route matched, so an unknown path under `/vault`
 * still answers 401 before 404, as under `/interns`.
 */
export function classifyVaultRoute(method: string, routePattern: string | undefined, url: string): VaultRoute | null {
  const path = routePattern ?? decodedPathOf(url);
  if (path !== VAULT_PATH && !path.startsWith(`${VAULT_PATH}/`)) return null;
  return { write: method !== 'GET' && method !== 'HEAD' };
}
