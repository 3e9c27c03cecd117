import type { Principal } from '@interns/contracts';
import type { ResolvedCredential } from '@interns/identity';

/**
 * The Principal services see, or null when the credential cannot use intern routes at all: management
 * keys (provisioning-only on intern routes) and credentials without a workspace (there is no default one).
 */
export function principalOf(credential: ResolvedCredential): Principal | null {
  if (credential.kind === 'management' || credential.workspaceId === null) return null;
  return {
    kind: credential.kind,
    organizationId: credential.organizationId,
    workspaceId: credential.workspaceId,
    memberId: credential.memberId,
    keyId: credential.keyId,
    internId: credential.internId,
    scopes: credential.scopes,
    chatappInstallRequired: credential.organization.chatappInstallRequired,
  };
}
