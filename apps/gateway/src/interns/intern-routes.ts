/**
 * Which requests are intern routes (CONTRACT section 1 applies to every route under /interns) and which
 * of them are lifecycle writes (check 5). Matched on the router's own route pattern when a route matched,
 * so encoded or absolute-form targets cannot slip past the checks; an unmatched path is judged by its
 * decoded text, so routes not implemented yet still answer in check order.
 */
import { DomainError, isUuid, WORKSPACE_EVENTS_PATH } from '@interns/contracts';
import { API_PREFIX } from '../http/api-prefix';

export const INTERNS_PATH = `${API_PREFIX}/interns`;
/**
 * The workspace event stream (interface section 23): not under /interns, but an intern route in every check
 * (credentials, order, programme), as the contract names it.
 */
export const EVENTS_PATH = `${API_PREFIX}${WORKSPACE_EVENTS_PATH}`;
/** The parameter name every `/interns/{intern_id}` route uses (controllers must declare it so). */
export const INTERN_ID_PARAM = 'intern_id';

const ONE_INTERN = `${INTERNS_PATH}/:${INTERN_ID_PARAM}`;

/** The egress policy of an intern (interface section 19). */
export const EGRESS_POLICY_PATH = `${ONE_INTERN}/egress`;

/** Create, update, delete, provision, suspend and the egress policy's put: refused with 404 when lifecycle writes are disabled. */
const LIFECYCLE_WRITES: ReadonlySet<string> = new Set([
  `POST ${INTERNS_PATH}`,
  `PATCH ${ONE_INTERN}`,
  `DELETE ${ONE_INTERN}`,
  `POST ${ONE_INTERN}/provision`,
  `POST ${ONE_INTERN}/suspend`,
  `PUT ${EGRESS_POLICY_PATH}`,
]);

/**
 * Intern routes an intern key may not use at all, even on its own intern (403 `forbidden`), with the message saying
 * why. The egress policy's put: the policy bounds what an intern may reach, so it is set by the workspace's members
 * and keys, never by the credential scoped to the intern itself (else an intern could widen its own egress).
 */
const CLOSED_TO_INTERN_KEYS: ReadonlyMap<string, string> = new Map([
  [`PUT ${EGRESS_POLICY_PATH}`, 'an intern key cannot change an egress policy'],
]);

/** Chat and invoke: the route deadline is the run routes' (RUN_ROUTE_DEADLINE_MS), not the lifecycle routes'. */
const RUN_ROUTES: ReadonlySet<string> = new Set([`POST ${ONE_INTERN}/chat/completions`, `POST ${ONE_INTERN}/invoke`]);

export interface InternRoute {
  /** The route's shape, `/api/v1/interns/:intern_id/...`. */
  pattern: string;
  lifecycleWrite: boolean;
  runRoute: boolean;
  /** Why an intern key is refused here with 403 `forbidden` (after check 5), or null when it may use the route. */
  internKeyRefusal: string | null;
}

/**
 * @param method the request method
 * @param routePattern the matched route's pattern, or undefined when no route matched
 * @param url the request target, used only when no route matched
 */
export function classifyInternRoute(method: string, routePattern: string | undefined, url: string): InternRoute | null {
  const pattern = routePattern ?? patternOfPath(pathOf(url));
  if (pattern === null || !(isUnderInterns(pattern) || pattern === EVENTS_PATH)) return null;
  const route = `${method} ${pattern}`;
  return {
    pattern,
    lifecycleWrite: LIFECYCLE_WRITES.has(route),
    runRoute: RUN_ROUTES.has(route),
    internKeyRefusal: CLOSED_TO_INTERN_KEYS.get(route) ?? null,
  };
}

function isUnderInterns(path: string): boolean {
  return path === INTERNS_PATH || path.startsWith(`${INTERNS_PATH}/`);
}

function pathOf(url: string): string {
  const query = url.indexOf('?');
  let path = query === -1 ? url : url.slice(0, query);
  if (path.includes('%')) {
    try {
      path = decodeURIComponent(path);
    } catch {
      // Malformed escapes: the router answers such targets itself.
    }
  }
  return path;
}

/** `/api/v1/interns/<anything>/rest` -> `/api/v1/interns/:intern_id/rest`. */
function patternOfPath(path: string): string | null {
  if (path === EVENTS_PATH) return path;
  if (!isUnderInterns(path)) return null;
  if (path === INTERNS_PATH) return path;
  const rest = path.slice(INTERNS_PATH.length + 1);
  const slash = rest.indexOf('/');
  return slash === -1 ? ONE_INTERN : `${ONE_INTERN}${rest.slice(slash)}`;
}

/** Check 7, the part the gateway can see: an id that is not a uuid names no intern. */
export function visibleId(internId: string): string {
  if (!isUuid(internId)) throw new DomainError('not_found', 'intern not found');
  return internId.toLowerCase();
}
