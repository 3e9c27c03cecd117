import type { Principal } from '@interns/contracts';
import type { RequestContext } from '@interns/observability';
import type { DoorAccess } from './door/door-gate';

/**
 * What the gateway learns about a request before its handler runs; set by the admission hook. It is also
 * the request's context (see RequestAdmission.enterRequestContext): log lines written while it is handled
 * carry its correlation id, RPCs carry the id and its trace (`traceContext`, set while tracing is on).
 */
export interface GatewayRequestState extends RequestContext {
  /** Minted per request; answered as `x-correlation-id`, logged, and carried by every RPC. */
  correlationId: string;
  /** `performance.now()` at arrival: route deadlines are measured from here. */
  arrivedAt: number;
  /**
   * The matched route's pattern (`/api/v1/interns/:intern_id`), undefined when no route matched. Read once:
   * Fastify's `request.routeOptions` builds a new object on every read.
   */
  route: string | undefined;
  /** The deadline of the route the request is on (quoted by its 408). */
  routeDeadlineMs: number;
  /** Set once checks 1-5 of CONTRACT section 1 passed. */
  principal: Principal | null;
  /**
   * The request's Content-Type as sent. The hook takes the header off the request so Fastify never
   * judges media types itself: the body rules decide 415 versus 400 (see body-rules.ts).
   */
  contentType: string | undefined;
  /** Set on door requests (interface section 20) once the door's checks passed: the intern and the token's member. */
  door?: DoorAccess;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** null only for requests the gateway's hook never saw (the router turned them away first). */
    gateway: GatewayRequestState | null;
  }
}

export const CORRELATION_ID_HEADER = 'x-correlation-id';
