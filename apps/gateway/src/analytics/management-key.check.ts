import { ANALYTICS_ERROR_MESSAGES, UNAUTHENTICATED_MESSAGE } from '@interns/contracts';
import type { CredentialResolver, ResolvedCredential } from '@interns/identity';
import { HttpErrorException } from '../chat/http-error.exception';
import { analyticsHttpError } from './analytics-errors';

/**
 * CONTRACT section 9: analytics routes take management keys only. No Authorization header: 401
 * `missing authentication header`; a header naming no usable credential (unknown or disabled key, bad or
 * expired token, another scheme): 401 `invalid or missing API key`; any other valid credential: 403.
 */
export async function requireManagementKey(
  resolver: CredentialResolver,
  authorization: string | undefined,
): Promise<ResolvedCredential> {
  if (authorization === undefined) {
    throw new HttpErrorException(analyticsHttpError(401, ANALYTICS_ERROR_MESSAGES.missingHeader));
  }
  const credential = await resolver.resolve(authorization);
  if (credential === null) throw new HttpErrorException(analyticsHttpError(401, UNAUTHENTICATED_MESSAGE));
  if (credential.kind !== 'management') {
    throw new HttpErrorException(analyticsHttpError(403, ANALYTICS_ERROR_MESSAGES.managementOnly));
  }
  return credential;
}
