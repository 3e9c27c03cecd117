import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OAUTH_SCOPES } from '@interns/contracts';
import type { PlatformConfig, Principal } from '@interns/contracts';
import type { CredentialResolver, ResolvedCredential } from '@interns/identity';
import type { AuthFailureLimiter } from '../auth/auth-failure-limiter';
import type { HttpError } from '../http/http-errors';
import { endHttpServerSpan, runInRequestContext, startHttpServerSpan, tracingEnabled } from '@interns/observability';
import { principalOf } from '../auth/credential-principal';
import { CORRELATION_ID_HEADER, GatewayRequestState } from '../gateway-request';
import { clientAddressOf } from '../http/client-address';
import { apiError, rateLimitedError, sendHttpError, toHttpError, unauthenticatedError } from '../http/http-errors';
import { isDoorAccess, type DoorGate } from '../door/door-gate';
import type { DoorHosts } from '../door/door-host';
import { doorRouteOf } from '../door/door-routes';
import { remainingDeadline } from '../service.client';
import { classifyInternRoute, InternRoute } from '../interns/intern-routes';
import { regionalHostMatcher } from '../http/regional-host';
import { isWebhookRoute } from '../webhooks/webhook-routes';
import { classifyVaultRoute, type VaultRoute } from '../vault/vault-routes';

/** The credentials CONTRACT section 13 admits to webhook routes; the others (management, intern keys) get 403. */
const WEBHOOK_CREDENTIALS: ReadonlySet<string> = new Set(['user', 'organization', 'oauth']);

/** The door's part of admission: which hosts are doors, and the checks every door request passes. */
export interface DoorAdmission {
  hosts: DoorHosts;
  gate: DoorGate;
}

/**
 * How a request is admitted into the gateway: the Fastify `onRequest` hook `admit`. For every request it mints
 * the correlation id, starts the route deadline clock and (tracing on) the request's span. A request whose Host is
 * under INTERN_DOMAIN is the door's (interface section 20): it passes the door's checks and reaches a door route or
 * 404, never `/api/v1`. For every other request's route under
 * `/api/v1/interns` it runs checks 1-5 of CONTRACT section 1, in order, before the body is read (so a refused
 * caller never gets to upload, and 401 beats 413). With tracing on, its other two hooks carry the request's
 * context into the handler and end the span.
 *
 * Without tracing the gateway never enters an AsyncLocalStorage context: on Node 20 the first one turns on
 * promise hooks for the whole process (about a fifth of the gateway's CPU per request). Its log lines name the
 * request's `correlation_id` explicitly instead, and its RPCs pass it explicitly.
 */
export class RequestAdmission {
  private readonly isRegionalHost: (host: string | undefined) => boolean;

  constructor(
    private readonly config: PlatformConfig,
    private readonly resolver: CredentialResolver,
    private readonly authFailures: AuthFailureLimiter,
    private readonly door: DoorAdmission,
  ) {
    this.isRegionalHost = regionalHostMatcher(config.publicHost);
  }

  readonly admit = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const routePattern = request.routeOptions.url;
    const state: GatewayRequestState = {
      correlationId: randomUUID(),
      arrivedAt: performance.now(),
      route: routePattern,
      routeDeadlineMs: this.config.lifecycleRouteDeadlineMs,
      principal: null,
      contentType: undefined,
      traceContext: tracingEnabled()
        ? startHttpServerSpan({ method: request.method, route: routePattern, url: request.url, headers: request.headers })
        : undefined,
    };
    request.gateway = state;
    reply.header(CORRELATION_ID_HEADER, state.correlationId);
    takeOverContentType(request, state);
    // HTTP/1.1 requires Host (RFC 9112); Node is told not to refuse it itself, so the refusal is in the envelope.
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      return sendHttpError(reply, apiError('invalid_body', 'a Host header is required'));
    }

    const doorHostname = this.door.hosts.hostnameOf(request.headers.host);
    if (doorHostname !== null) {
      const admitDoor = () => this.admitDoor(request, state, doorHostname);
      const doorRefusal = await (tracingEnabled() ? runInRequestContext(state, admitDoor) : admitDoor());
      return doorRefusal === null ? undefined : sendHttpError(reply, doorRefusal);
    }

    const route = classifyInternRoute(request.method, routePattern, request.url);
    const webhookRoute = route === null && isWebhookRoute(routePattern, request.url);
    const vaultRoute = route === null && !webhookRoute ? classifyVaultRoute(request.method, routePattern, request.url) : null;
    if (route === null && !webhookRoute && vaultRoute === null) return undefined;
    if (route?.runRoute) state.routeDeadlineMs = this.config.runRouteDeadlineMs;
    const check = () => {
      if (route !== null) return this.check(request, route, state);
      if (vaultRoute !== null) return this.checkVaultCaller(request, vaultRoute, state);
      return this.checkWebhookCaller(request, state);
    };
    const refusal = await (tracingEnabled() ? runInRequestContext(state, check) : check());
    if (refusal === null) return undefined;
    return sendHttpError(reply, refusal);
  };

  /**
   * preHandler, registered before any other: the route handler runs inside the request's context. (The body
   * is read between onRequest and here, in the socket's own async context, so the context is entered again.)
   */
  readonly enterRequestContext = (request: FastifyRequest, _reply: FastifyReply, done: () => void): void => {
    const state = request.gateway;
    if (state === null) done();
    else runInRequestContext(state, done);
  };

  /** onResponse (tracing on): ends the request's span with its status. */
  readonly finishRequest = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const traceContext = request.gateway?.traceContext;
    if (traceContext !== undefined) endHttpServerSpan(traceContext, reply.statusCode);
    done();
  };

  /**
   * The door's checks (DoorGate), then its routes: a path the door does not serve is 404 once the caller proved it
   * holds a token, whatever `/api/v1` serves at that path. Null when the request may go on (with its DoorAccess).
   */
  private async admitDoor(request: FastifyRequest, state: GatewayRequestState, hostname: string): Promise<HttpError | null> {
    const route = doorRouteOf(request);
    if (route?.runRoute) state.routeDeadlineMs = this.config.runRouteDeadlineMs;
    try {
      const access = await this.door.gate.admit({
        hostname,
        authorization: request.headers.authorization,
        clientAddress: this.clientAddress(request),
        deadline: remainingDeadline(state, `door ${hostname}`),
      });
      if (!isDoorAccess(access)) return access;
      if (route === null) return apiError('not_found', 'the door serves no such route');
      state.principal = access.principal;
      state.door = access;
      return null;
    } catch (error) {
      return toHttpError(error, state.routeDeadlineMs);
    }
  }

  private clientAddress(request: FastifyRequest): string {
    return clientAddressOf(request, this.config.trustForwardedFor);
  }

  /**
   * Checks 1-5, then the refusal of intern keys on routes closed to them (the egress policy's put); null when the
   * request may go on (with `state.principal` set).
   */
  private async check(request: FastifyRequest, route: InternRoute, state: GatewayRequestState): Promise<HttpError | null> {
    const authenticated = await this.authenticate(request);
    if ('status' in authenticated) return authenticated;
    const { credential, principal } = authenticated;
    // Management keys (provisioning-only here) and credentials without a workspace.
    if (principal === null) return this.unauthenticated(request);

    const ownerAccess = ownerAccessRefusal(credential);
    if (ownerAccess !== null) return ownerAccess;

    if (!credential.organization.programme) return apiError('not_found', 'not found');
    if (route.lifecycleWrite && !credential.organization.lifecycleWrites) return apiError('not_found', 'not found');
    // Before the body is read, whichever intern the path names: the answer is the same for its own and any other.
    if (route.internKeyRefusal !== null && credential.kind === 'intern') return apiError('forbidden', route.internKeyRefusal);

    state.principal = principal;
    return null;
  }

  /**
   * Webhook routes (CONTRACT section 13): the intern routes' checks 1-4 in their order, except that management
   * and intern keys are refused with 403 `forbidden` rather than 401 (they are valid credentials, not for
   * these routes). Lifecycle writes (check 5) are about interns and do not apply.
   */
  private async checkWebhookCaller(request: FastifyRequest, state: GatewayRequestState): Promise<HttpError | null> {
    const authenticated = await this.authenticate(request);
    if ('status' in authenticated) return authenticated;
    const { credential, principal } = authenticated;
    if (!WEBHOOK_CREDENTIALS.has(credential.kind)) {
      return apiError('forbidden', 'webhooks are managed with user or organization keys or OAuth tokens');
    }
    // A user or organization key without a workspace: there is no default one.
    if (principal === null) return this.unauthenticated(request);

    const ownerAccess = ownerAccessRefusal(credential);
    if (ownerAccess !== null) return ownerAccess;
    if (!credential.organization.programme) return apiError('not_found', 'not found');

    state.principal = principal;
    return null;
  }

  /**
   * Vault routes (interface section 18): section 1's checks in order, where intern keys get 404 on every vault
   * route and management keys 401 (as on intern routes); a write while the organization's lifecycle writes are
   * off is 503 `vault_writes_disabled` (reads still work). The vault's lower body cap is the controller's.
   */
  private async checkVaultCaller(request: FastifyRequest, route: VaultRoute, state: GatewayRequestState): Promise<HttpError | null> {
    const authenticated = await this.authenticate(request);
    if ('status' in authenticated) return authenticated;
    const { credential, principal } = authenticated;
    if (principal === null) return this.unauthenticated(request);
    const ownerAccess = ownerAccessRefusal(credential);
    if (ownerAccess !== null) return ownerAccess;
    if (!credential.organization.programme || credential.kind === 'intern') return apiError('not_found', 'not found');
    if (route.write && !credential.organization.lifecycleWrites) {
      return apiError('vault_writes_disabled', "this organization's vault writes are disabled");
    }
    state.principal = principal;
    return null;
  }

  /**
   * Whether a credential admitted to an intern route still passes checks 2-4 as the same principal (workspace,
   * member, intern): a long-lived stream (the workspace event stream) asks again now and then, so a revocation,
   * a deactivated member or an organization leaving the programme ends it. Nothing is counted against the client.
   */
  async stillAdmits(authorization: string | undefined, admitted: Principal): Promise<boolean> {
    const credential = await this.resolver.resolve(authorization);
    if (credential === null || ownerAccessRefusal(credential) !== null || !credential.organization.programme) return false;
    const principal = principalOf(credential);
    return (
      principal !== null &&
      principal.kind === admitted.kind &&
      principal.workspaceId === admitted.workspaceId &&
      principal.memberId === admitted.memberId &&
      principal.internId === admitted.internId
    );
  }

  /**
   * Checks 1 and 2 as far as every route shares them: the regional host, then the credential. A credential that
   * resolves is returned with its principal (null: a management key or no workspace) for the route's rules to
   * judge; an unusable one is 401 and counts against the client address.
   */
  private async authenticate(
    request: FastifyRequest,
  ): Promise<HttpError | { credential: ResolvedCredential; principal: ReturnType<typeof principalOf> }> {
    if (this.isRegionalHost(request.headers.host)) {
      return apiError('forbidden', 'this API is not served on regional hosts');
    }

    // Before the credential is looked at: an address that keeps failing costs no hash and no query.
    const address = this.clientAddress(request);
    const retryAfterSeconds = this.authFailures.retryAfterSeconds(address);
    if (retryAfterSeconds !== null) return rateLimitedError(retryAfterSeconds, 'too many authentication failures from this address');

    const credential = await this.resolver.resolve(request.headers.authorization);
    if (credential === null) return this.unauthenticated(request);
    return { credential, principal: principalOf(credential) };
  }

  /** 401, counted against the client address (CONTRACT section 16). */
  private async unauthenticated(request: FastifyRequest): Promise<HttpError> {
    await this.authFailures.recordFailure(this.clientAddress(request));
    return unauthenticatedError();
  }
}

/**
 * Check 3 of section 1 as every route family applies it: the credential's owner still has access, and an OAuth
 * token carries the `interns` scope. Null when it passes.
 */
function ownerAccessRefusal(credential: ResolvedCredential): HttpError | null {
  if (!credential.memberActive) return apiError('forbidden', "the credential's owner has lost access");
  if (credential.kind === 'oauth' && !credential.scopes.includes(OAUTH_SCOPES.interns)) {
    return apiError('insufficient_scope', `the access token lacks the "${OAUTH_SCOPES.interns}" scope`);
  }
  return null;
}

/** See body-rules.ts: the media type is judged by the route's body rules, never by Fastify. */
function takeOverContentType(request: FastifyRequest, state: GatewayRequestState): void {
  const headers = request.raw.headers;
  const contentType = headers['content-type'];
  if (contentType === undefined) return;
  state.contentType = contentType;
  delete headers['content-type'];
}
