import { ApiError } from './api-error';
import { ApiClient, path } from './client';
import type { SignedIn } from './credential-store';

/** Thrown when the credential is good but sees no intern list: an intern key, which must name its intern. */
export class InternIdNeeded extends Error {
  constructor() {
    super('this credential sees no list of interns (an intern key?): enter the id of its intern');
    this.name = 'InternIdNeeded';
  }
}

/**
 * What a pasted credential may do, asked of the API itself (the console never parses a credential): the intern list
 * answers a workspace credential (user or organization key, OAuth token with `interns`); the analytics catalogue a
 * management key; an intern key sees only its intern, so it needs that intern's id.
 */
export async function identify(credential: string, internId: string | null): Promise<SignedIn> {
  const client = new ApiClient(credential);
  if (internId !== null) {
    await client.json(path`/interns/${internId}`);
    return { credential, kind: 'intern', internId };
  }
  try {
    await client.json('/interns?limit=1');
    return { credential, kind: 'workspace' };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 404) throw new InternIdNeeded();
    if (error.status !== 401) throw error;
    try {
      await client.json('/analytics/meta');
      return { credential, kind: 'management' };
    } catch {
      throw error;
    }
  }
}
