/**
 * Who is signed in, kept in the tab's sessionStorage only: gone when the tab closes, never in localStorage, a cookie
 * or a URL, so no other origin's script and no request the browser sends on its own carries it. Another script on
 * this origin could read it; the Content-Security-Policy admits none.
 */
export type CredentialKind = 'workspace' | 'intern' | 'management';

export interface SignedIn {
  credential: string;
  kind: CredentialKind;
  /** The one intern an intern key sees. */
  internId?: string;
}

const STORAGE_KEY = 'interns.console.session';

export function readSignedIn(storage: Storage = sessionStorage): SignedIn | null {
  try {
    const parsed = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null') as SignedIn | null;
    if (parsed === null || typeof parsed.credential !== 'string' || typeof parsed.kind !== 'string') return null;
    return parsed;
  } catch {
    return null;
  }
}

export function writeSignedIn(signedIn: SignedIn, storage: Storage = sessionStorage): void {
  storage.setItem(STORAGE_KEY, JSON.stringify(signedIn));
}

export function clearSignedIn(storage: Storage = sessionStorage): void {
  storage.removeItem(STORAGE_KEY);
}
