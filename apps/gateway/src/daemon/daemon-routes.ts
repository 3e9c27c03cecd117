import { INTERN_ID_PARAM, INTERNS_PATH } from '../interns/intern-routes';

/** Relative to the interns controller: each route, then its deprecated alias. */
export const DAEMON_ACCESS_ROUTES = [`:${INTERN_ID_PARAM}/daemon`, `:${INTERN_ID_PARAM}/daemon-access`];
export const DAEMON_SIGN_ROUTES = [`:${INTERN_ID_PARAM}/daemon/sign`, `:${INTERN_ID_PARAM}/daemon-access/sign`];

/** Full pattern of a deprecated alias -> its successor's path after `/interns/<id>`. */
const ALIAS_SUCCESSORS: ReadonlyMap<string, string> = new Map([
  [`${INTERNS_PATH}/:${INTERN_ID_PARAM}/daemon-access`, 'daemon'],
  [`${INTERNS_PATH}/:${INTERN_ID_PARAM}/daemon-access/sign`, 'daemon/sign'],
]);

/**
 * The headers a deprecated alias adds to every answer (CONTRACT section 8), or null for any other route.
 * @param routePattern the matched route's pattern
 * @param internId the `intern_id` parameter as the router decoded it
 */
export function deprecationHeaders(routePattern: string | undefined, internId: string | undefined): Record<string, string> | null {
  const successor = routePattern === undefined ? undefined : ALIAS_SUCCESSORS.get(routePattern);
  if (successor === undefined) return null;
  // Encoded, so whatever the client put in the id cannot break out of the header.
  const id = encodeURIComponent(internId ?? '');
  return { deprecation: 'true', link: `<${INTERNS_PATH}/${id}/${successor}>; rel="successor-version"` };
}
