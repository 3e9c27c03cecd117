/** Who is calling, as resolved by the gateway from the credential (CONTRACT section 1). */
export type CredentialKind = 'user' | 'organization' | 'intern' | 'management' | 'oauth';

export interface Principal {
  kind: Exclude<CredentialKind, 'management'>;
  organizationId: string;
  workspaceId: string;
  /** The member the credential acts for (user keys, OAuth tokens); null for organization and intern keys. */
  memberId: string | null;
  /** The API key's id; null for OAuth tokens. */
  keyId: string | null;
  /** Set only for intern keys: the one intern they may reach. */
  internId: string | null;
  scopes: string[];
  /**
   * The organization requires a chat-app install before provisioning (organization flag
   * `chatapp_install_required`); whether it is recorded for the workspace is lifecycle's to know.
   */
  chatappInstallRequired: boolean;
}

/** "The caller" for session ownership and rate limits: the member if any, else the key. */
export function callerId(principal: Principal): string {
  if (principal.memberId !== null) return `member:${principal.memberId}`;
  return `key:${principal.keyId}`;
}

/** Metadata every service request carries: who, and the request's correlation id. */
export interface RequestContext {
  correlationId: string;
  principal: Principal;
}

/** OAuth scopes the API knows (CONTRACT section 1). */
export const OAUTH_SCOPES = { interns: 'interns', vaultRead: 'vault:read' } as const;
