import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OAUTH_SCOPES } from '@interns/contracts';
import type { PlatformConfig } from '@interns/contracts';
import type { CredentialResolver } from '@interns/identity';
import type { AuthFailureLimiter } from './auth-failure-limiter';
import type { HttpError } from './http-errors';
import { endHttpServerSpan, runInRequestContext, startHttpServerSpan, tracingEnabled } from '@interns/observability';
import { principalOf } from './credential-principal';
import { CORRELATION_ID_HEADER, GatewayRequestState } from './gateway-request';
import { clientAddressOf } from './client-address';
import { apiError, rateLimitedError, sendHttpError, unauthenticatedError } from './http-errors';
import { classifyInternRoute, InternRoute } from './intern-routes';
import { regionalHostMatcher } from './regional-host';

/**
 * How a request is admitted into the gateway: the Fastify `onRequest` hook `admit`. For every request it mints
 * the correlation id, starts the route deadline clock and (tracing on) the request's span; for every route under
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
  ) {
    this.isRegionalHost = regionalHostMatcher(config.publicHost);
  }

  readonly admit = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const state: GatewayRequestState = {
      correlationId: randomUUID(),
      arrivedAt: performance.now(),
      routeDeadlineMs: this.config.lifecycleRouteDeadlineMs,
      principal: null,
      contentType: undefined,
      traceContext: startHttpServerSpan({
        method: request.method,
        route: request.routeOptions.url,
        url: request.url,
        headers: request.headers,
      }),
    };
    request.gateway = state;
    reply.header(CORRELATION_ID_HEADER, state.correlationId);
    takeOverContentType(request, state);

    const route = classifyInternRoute(request.method, request.routeOptions.url, request.url);
    if (route === null) return undefined;
    if (route.runRoute) state.routeDeadlineMs = this.config.runRouteDeadlineMs;
    const refusal = await (tracingEnabled()
      ? runInRequestContext(state, () => this.check(request, route, state))
      : this.check(request, route, state));
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

  private clientAddress(request: FastifyRequest): string {
    return clientAddressOf(request, this.config.trustForwardedFor);
  }

  /** Checks 1-5; null when the request may go on (with `state.principal` set). */
  private async check(request: FastifyRequest, route: InternRoute, state: GatewayRequestState): Promise<HttpError | null> {
    if (this.isRegionalHost(request.headers.host)) {
      return apiError('forbidden', 'this API is not served on regional hosts');
    }

    // Before the credential is looked at: an address that keeps failing costs no hash and no query.
    const address = this.clientAddress(request);
    const retryAfterSeconds = this.authFailures.retryAfterSeconds(address);
    if (retryAfterSeconds !== null) return rateLimitedError(retryAfterSeconds, 'too many authentication failures from this address');

    const credential = await this.resolver.resolve(request.headers.authorization);
    const principal = credential === null ? null : principalOf(credential);
    if (credential === null || principal === null) {
      await this.authFailures.recordFailure(address);
      return unauthenticatedError();
    }

    if (!credential.memberActive) return apiError('forbidden', "the credential's owner has lost access");
    if (credential.kind === 'oauth' && !credential.scopes.includes(OAUTH_SCOPES.interns)) {
      return apiError('insufficient_scope', `the access token lacks the "${OAUTH_SCOPES.interns}" scope`);
    }

    if (!credential.organization.programme) return apiError('not_found', 'not found');
    if (route.lifecycleWrite && !credential.organization.lifecycleWrites) return apiError('not_found', 'not found');

    state.principal = principal;
    return null;
  }
}

/** See body-rules.ts: the media type is judged by the route's body rules, never by Fastify. */
function takeOverContentType(request: FastifyRequest, state: GatewayRequestState): void {
  const headers = request.raw.headers;
  const contentType = headers['content-type'];
  if (contentType === undefined) return;
  state.contentType = contentType;
  delete headers['content-type'];
}
