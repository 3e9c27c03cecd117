import { createContext, useContext } from 'react';
import type { ApiClient } from './api/client';
import type { SignedIn } from './api/credential-store';
import type { LiveStatus } from './api/live-events';

export interface Session {
  signedIn: SignedIn;
  client: ApiClient;
  live: { status: LiveStatus; detail?: string };
  signOut(): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === null) throw new Error('useSession outside a signed-in console');
  return session;
}
