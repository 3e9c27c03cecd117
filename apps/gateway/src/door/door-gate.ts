import { OAUTH_SCOPES } from '@interns/contracts';
import type { DoorIntern, Principal } from '@interns/contracts';
import type { AuthFailureLimiter } from '../auth/auth-failure-limiter';
import { apiError, rateLimitedError, unauthenticatedError, type HttpError } from '../http/http-errors';
import type { DaemonTokenCache, ValidDaemonToken } from './daemon-token-cache';
import type { InternDirectory } from './intern-directory';

/** What a door request is served as once the gate let it through. */
export interface DoorAccess {
  intern: DoorIntern;
  token: ValidDaemonToken;
  /**
   * The token's member acting in the intern's workspace, as services see an OAuth caller: the token was revealed to
   * that member's OAuth token (CONTRACT section 8), so sessions and turn budgets are the member's, as through /api/v1.
   */
  principal: Principal;
}

/** One door request as the gate needs it: the normalized hostname, the `Authorization` header and who sent it. */
export interface DoorKnock {
  hostname: string;
  authorization: string | undefined;
  clientAddress: string;
  /** What is left of the route deadline for the lookups, and the request's correlation id. */
  deadline: { timeoutMs: number; correlationId: string };
}

/** A daemon token as revealed: base64url. Anything else is refused without asking lifecycle. */
const BEARER = /^Bearer +([A-Za-z0-9_-]{16,512}) *$/i;

/**
 * The door's checks before any route (interface section 20), in the contract's order: a hostname no intern has 404,
 * an intern not `running` 409 `intern_not_running`, then the daemon token (missing, unknown, expired, revoked or
 * another intern's: 401, counted against the client address like every 401). Shared by every door route, the
 * terminal's WebSocket upgrade included, so none can skip a check.
 */
export class DoorGate {
  constructor(
    private readonly directory: InternDirectory,
    private readonly tokens: DaemonTokenCache,
    private readonly authFailures: AuthFailureLimiter,
  ) {}

  async admit(knock: DoorKnock): Promise<DoorAccess | HttpError> {
    const intern = await this.directory.lookup(knock.hostname, knock.deadline);
    if (intern === null) return notFound();
    const notRunning = internRefusal(intern);
    if (notRunning !== null) return notRunning;

    const retryAfterSeconds = this.authFailures.retryAfterSeconds(knock.clientAddress);
    if (retryAfterSeconds !== null) return rateLimitedError(retryAfterSeconds, 'too many authentication failures from this address');

    const bearer = BEARER.exec(knock.authorization ?? '')?.[1];
    const token = bearer === undefined ? null : await this.tokens.check(bearer, knock.deadline);
    if (token === null || token.internId !== intern.id) {
      // Suspend and delete end an intern's tokens: a client holding one learns why (409) rather than a bare 401,
      // even while the cached status has not caught up yet.
      const current = await this.directory.lookup(knock.hostname, knock.deadline, true);
      const now = internRefusal(current);
      if (now !== null) return now;
      await this.authFailures.recordFailure(knock.clientAddress);
      return unauthenticatedError();
    }
    return { intern, token, principal: memberPrincipal(intern, token) };
  }
}

export function isDoorAccess(value: DoorAccess | HttpError): value is DoorAccess {
  return 'principal' in value;
}

function notFound(): HttpError {
  return apiError('not_found', 'no intern answers at this hostname');
}

function internRefusal(intern: DoorIntern | null): HttpError | null {
  if (intern === null) return notFound();
  if (intern.status !== 'running') return apiError('intern_not_running', `the intern is ${intern.status}, not running`);
  return null;
}

function memberPrincipal(intern: DoorIntern, token: ValidDaemonToken): Principal {
  return {
    kind: 'oauth',
    organizationId: intern.organizationId,
    workspaceId: intern.workspaceId,
    memberId: token.memberId,
    keyId: null,
    internId: null,
    scopes: [OAUTH_SCOPES.interns],
    // Only provisioning reads it, and the door provisions nothing.
    chatappInstallRequired: false,
  };
}
