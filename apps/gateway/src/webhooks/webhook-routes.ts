import { API_PREFIX } from '../http/api-prefix';
import { decodedPathOf } from '../http/request-path';

export const WEBHOOKS_PATH = `${API_PREFIX}/webhooks`;
/** The parameter name of every `/webhooks/{webhook_id}` route. */
export const WEBHOOK_ID_PARAM = 'webhook_id';

/**
 * Whether a request is on a webhook route (CONTRACT section 13), whose credential rules the admission hook
 * applies: by the matched route's pattern, or by the decoded path when no route matched, so an unknown path
 * under `/webhooks` still answers 401/403 before 404, as under `/interns`.
 */
export function isWebhookRoute(routePattern: string | undefined, url: string): boolean {
  return isUnderWebhooks(routePattern ?? decodedPathOf(url));
}

function isUnderWebhooks(path: string): boolean {
  return path === WEBHOOKS_PATH || path.startsWith(`${WEBHOOKS_PATH}/`);
}
