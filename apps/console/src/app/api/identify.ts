import { ApiError } from './api-error';
import { ApiClient, path } from './client';
import type { CredentialKind, SignedIn } from './credential-store';

/** What a user says a credential is for, and the one request that proves it (so a good sign-in makes no failing request). */
export const CREDENTIAL_KINDS: readonly { kind: CredentialKind; label: string }[] = [
  { kind: 'workspace', label: 'Interns of my workspace (user or organization key, OAuth token)' },
  { kind: 'management', label: 'Analytics (management key)' },
  { kind: 'intern', label: 'One intern (intern key)' },
];

/** A refusal with a hint at the likelier kind when the API says this credential is not for that use. */
function withHint(error: unknown, kind: CredentialKind): unknown {
  if (!(error instanceof ApiError)) return error;
  if (kind === 'workspace' && error.status === 401) return new ApiError(401, `${error.message} (a management key? choose Analytics)`, error.reason);
  if (kind === 'workspace' && error.status === 404) return new ApiError(404, 'this credential sees no list of interns (an intern key? choose One intern)', error.reason);
  if (kind === 'management' && error.status === 403) return new ApiError(403, `${error.message} (choose Interns of my workspace)`, error.reason);
  return error;
}

/**
 * Checks the pasted credential with the one request its use needs (the console never parses a credential): the intern
 * list for a workspace credential, the analytics catalogue for a management key, the intern itself for an intern key.
 */
export async function identify(credential: string, kind: CredentialKind, internId: string | null): Promise<SignedIn> {
  const client = new ApiClient(credential);
  try {
    if (kind === 'intern') {
      if (internId === null || internId === '') throw new ApiError(400, 'an intern key sees only its intern: give its id');
      await client.json(path`/interns/${internId}`);
      return { credential, kind, internId };
    }
    await client.json(kind === 'management' ? '/analytics/meta' : '/interns?limit=1');
    return { credential, kind };
  } catch (error) {
    throw withHint(error, kind);
  }
}
