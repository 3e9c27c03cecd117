import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { DoorAccess } from './door-gate';
import type { DoorHosts } from './door-host';

/**
 * One route of the door (interface section 20). Door routes exist only for hosts under INTERN_DOMAIN (a host
 * constraint), and their handlers run only after the admission hook's door checks (DoorGate) let the request through,
 * with the request's DoorAccess. This table is where a door route is added: the terminal (`GET /api/terminal`) goes
 * here for its plain-HTTP answers, with its WebSocket upgrade admitted by the same DoorGate.
 */
export interface DoorRoute {
  method: HTTPMethods;
  /** As the client sends it: the door has no `/api/v1` prefix. */
  path: string;
  /** Runs under the run route deadline (RUN_ROUTE_DEADLINE_MS) rather than the lifecycle one. */
  runRoute: boolean;
  handle(request: FastifyRequest, reply: FastifyReply, access: DoorAccess): Promise<unknown>;
}

/** What a door route carries in its Fastify route config, for the admission hook to recognize it. */
export interface DoorRouteConfig {
  door: { runRoute: boolean };
}

/** The door route a request was routed to, or null (an `/api/v1` route, or no route at all). */
export function doorRouteOf(request: FastifyRequest): DoorRouteConfig['door'] | null {
  const config = request.routeOptions.config as Partial<DoorRouteConfig> | undefined;
  return config?.door ?? null;
}

export function registerDoorRoutes(fastify: FastifyInstance, hosts: DoorHosts, routes: readonly DoorRoute[]): void {
  for (const route of routes) {
    fastify.route({
      method: route.method,
      url: route.path,
      constraints: { host: hosts.constraint },
      config: { door: { runRoute: route.runRoute } } satisfies DoorRouteConfig,
      handler: async (request, reply) => {
        const access = request.gateway?.door;
        // Only reachable if the admission hook did not run: refuse rather than serve unchecked.
        if (access === undefined) throw new Error('door request was not admitted');
        return route.handle(request, reply, access);
      },
    });
  }
}
