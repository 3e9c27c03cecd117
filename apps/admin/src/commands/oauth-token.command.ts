import type { IdentityStore, LocalOidcIssuer } from '@interns/identity';
import { UsageError } from '../admin.errors';
import { parseFlags, requireFlag, requireUuidFlag } from './command-args';

export const DEFAULT_TOKEN_TTL_SECONDS = 3600;
const MAX_TOKEN_TTL_SECONDS = 31536000;
/** RFC 6749 scope-token characters. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

export interface OauthTokenOptions {
  memberId: string;
  workspaceId: string;
  /** Normalised: single spaces, no duplicates; may be empty (a token without scopes). */
  scope: string;
  ttlSeconds: number;
}

export function parseOauthTokenArgs(args: string[]): OauthTokenOptions {
  const command = 'oauth-token';
  const { values } = parseFlags(command, args, {
    member: { type: 'string' },
    workspace: { type: 'string' },
    scope: { type: 'string' },
    ttl: { type: 'string' },
  });
  const memberId = requireFlag(command, 'member', values.member, 'member_id');
  if (memberId === '') throw new UsageError(`${command}: --member must not be empty`);
  const workspaceId = requireUuidFlag(command, 'workspace', values.workspace);
  const scopes = [...new Set(requireFlag(command, 'scope', values.scope, 'scopes').split(/\s+/).filter(Boolean))];
  const invalid = scopes.find((scope) => !SCOPE_TOKEN.test(scope));
  if (invalid !== undefined) throw new UsageError(`${command}: --scope holds an invalid scope "${invalid}"`);
  let ttlSeconds = DEFAULT_TOKEN_TTL_SECONDS;
  if (values.ttl !== undefined) {
    ttlSeconds = /^\d+$/.test(values.ttl) ? Number(values.ttl) : NaN;
    if (!(ttlSeconds >= 1 && ttlSeconds <= MAX_TOKEN_TTL_SECONDS)) {
      throw new UsageError(`${command}: --ttl must be an integer number of seconds, 1-${MAX_TOKEN_TTL_SECONDS}`);
    }
  }
  return { memberId, workspaceId, scope: scopes.join(' '), ttlSeconds };
}

/**
 * `oauth-token --member <id> --workspace <uuid> --scope "<scopes>" [--ttl <s>]`: an access token signed
 * by the local development issuer, for a member of the workspace's organization.
 */
export async function runOauthToken(
  options: OauthTokenOptions,
  store: IdentityStore,
  issuer: LocalOidcIssuer,
): Promise<{ access_token: string }> {
  const { organizationId } = await store.requireMemberOfWorkspace(options.memberId, options.workspaceId);
  const accessToken = await issuer.sign({
    sub: options.memberId,
    org: organizationId,
    workspace_id: options.workspaceId,
    scope: options.scope,
    ttlSeconds: options.ttlSeconds,
  });
  return { access_token: accessToken };
}
