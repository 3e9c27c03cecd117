import { ANALYTICS_ERROR_MESSAGES, UNAUTHENTICATED_MESSAGE } from '@interns/contracts';
import type { CredentialResolver, ResolvedCredential } from '@interns/identity';
import type { AuthFailureLimiter } from '../auth/auth-failure-limiter';
import { HttpErrorException } from '../chat/http-error.exception';
import { rateLimitedError } from '../http/http-errors';
import { analyticsHttpError, withoutMetadata } from './analytics-errors';

/** Where a request came from, and the limiter that counts its 401s (CONTRACT section 16). */
export interface AuthFailureWatch {
  limiter: AuthFailureLimiter;
  address: string;
}

/**
 * CONTRACT section 9: analytics routes take management keys only. No Authorization header: 401
 * `missing authentication header`; a header naming no usable credential (unknown or disabled key, bad or
 * expired token, another scheme): 401 `invalid or missing API key`; any other valid credential: 403.
 * Every 401 counts against the caller's address, as on the intern routes; a blocked address gets 429 first.
 */
export async function requireManagementKey(
  resolver: CredentialResolver,
  authorization: string | undefined,
  failures: AuthFailureWatch,
): Promise<ResolvedCredential> {
  const retryAfterSeconds = failures.limiter.retryAfterSeconds(failures.address);
  if (retryAfterSeconds !== null) {
    throw new HttpErrorException(withoutMetadata(rateLimitedError(retryAfterSeconds, 'too many authentication failures from this address')));
  }
  if (authorization === undefined) {
    await failures.limiter.recordFailure(failures.address);
    throw new HttpErrorException(analyticsHttpError(401, ANALYTICS_ERROR_MESSAGES.missingHeader));
  }
  const credential = await resolver.resolve(authorization);
  if (credential === null) {
    await failures.limiter.recordFailure(failures.address);
    throw new HttpErrorException(analyticsHttpError(401, UNAUTHENTICATED_MESSAGE));
  }
  if (credential.kind !== 'management') {
    throw new HttpErrorException(analyticsHttpError(403, ANALYTICS_ERROR_MESSAGES.managementOnly));
  }
  return credential;
}
