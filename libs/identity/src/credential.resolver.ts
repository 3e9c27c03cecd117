import type { DataSource } from 'typeorm';
import type { CredentialKind } from '@interns/contracts';
import { hashApiKey } from './api-key-hash';
import { BoundedTtlCache } from './bounded-ttl-cache';
import { looksLikeJwt } from './identity-file';
import { AccessTokenClaims, OAuthTokenVerifier, OidcOptions } from './oauth-token.verifier';

export interface ResolvedCredential {
  kind: CredentialKind;
  keyId: string | null;
  organizationId: string;
  workspaceId: string | null;
  memberId: string | null;
  internId: string | null;
  /** API keys: []; OAuth: the token's space-separated `scope`. */
  scopes: string[];
  /** true when the credential acts for no member. */
  memberActive: boolean;
  organization: { programme: boolean; lifecycleWrites: boolean; chatappInstallRequired: boolean };
  workspaceChatappInstalled: boolean;
}

export interface CredentialResolverOptions {
  dataSource: DataSource;
  /** How long a lookup (found or not) is trusted; bounds how late a disabled key stops working. */
  cacheTtlMs: number;
  oidc: OidcOptions;
  maxCacheEntries?: number;
}

const DEFAULT_MAX_CACHE_ENTRIES = 10000;
/** Longer than any sane API key or access token; refusing it early spares hashing and a query. */
const MAX_CREDENTIAL_LENGTH = 8192;
const BEARER = /^Bearer +(\S+) *$/i;

interface ApiKeyRow {
  id: string;
  kind: 'user' | 'organization' | 'management' | 'intern';
  organization_id: string;
  workspace_id: string | null;
  member_id: string | null;
  intern_id: string | null;
  programme: boolean;
  lifecycle_writes: boolean;
  chatapp_install_required: boolean;
  member_active: boolean | null;
  workspace_chatapp_installed: boolean;
}

interface MemberRow {
  member_active: boolean;
  workspace_id: string;
  programme: boolean;
  lifecycle_writes: boolean;
  chatapp_install_required: boolean;
  workspace_chatapp_installed: boolean;
}

// One indexed lookup (key_hash is unique) that brings everything the gateway's checks need.
const API_KEY_QUERY = `
  SELECT k.id::text, k.kind, k.organization_id, k.workspace_id::text, k.member_id, k.intern_id::text,
         o.programme, o.lifecycle_writes, o.chatapp_install_required,
         m.active AS member_active,
         (w.chatapp_installed_at IS NOT NULL) AS workspace_chatapp_installed
    FROM identity.api_keys k
    JOIN identity.organizations o ON o.id = k.organization_id
    LEFT JOIN identity.members m ON m.id = k.member_id
    LEFT JOIN identity.workspaces w ON w.id = k.workspace_id
   WHERE k.key_hash = $1 AND NOT k.disabled`;

// A token's member and workspace must both exist and belong to the token's organization.
const TOKEN_MEMBER_QUERY = `
  SELECT m.active AS member_active, w.id::text AS workspace_id,
         o.programme, o.lifecycle_writes, o.chatapp_install_required,
         (w.chatapp_installed_at IS NOT NULL) AS workspace_chatapp_installed
    FROM identity.members m
    JOIN identity.organizations o ON o.id = m.organization_id
    JOIN identity.workspaces w ON w.organization_id = o.id AND w.id = $3::uuid
   WHERE m.id = $1 AND m.organization_id = $2`;

/** The credential of `Bearer <credential>`, or null when the header is missing or has another form. */
export function bearerCredential(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = BEARER.exec(header);
  const credential = match?.[1];
  if (credential === undefined || credential.length > MAX_CREDENTIAL_LENGTH) return null;
  return credential;
}

/**
 * Turns an Authorization header into who is calling (CONTRACT section 1). API keys are looked up by
 * their SHA-256; OAuth access tokens are verified JWTs whose member and workspace must exist.
 * Results, found or not, are cached briefly; concurrent lookups of one credential share one query.
 */
export class CredentialResolver {
  private readonly dataSource: DataSource;
  private readonly cacheTtlMs: number;
  private readonly cache: BoundedTtlCache<ResolvedCredential | null>;
  private readonly inFlight = new Map<string, Promise<ResolvedCredential | null>>();
  private readonly tokens: OAuthTokenVerifier;

  constructor(options: CredentialResolverOptions) {
    this.dataSource = options.dataSource;
    this.cacheTtlMs = options.cacheTtlMs;
    this.cache = new BoundedTtlCache(options.maxCacheEntries ?? DEFAULT_MAX_CACHE_ENTRIES);
    this.tokens = new OAuthTokenVerifier(options.oidc);
  }

  /** null means 401. Throws only when the lookup itself failed (database or key source unreachable). */
  async resolve(authorizationHeader: string | undefined): Promise<ResolvedCredential | null> {
    const credential = bearerCredential(authorizationHeader);
    if (credential === null) return null;
    const cacheKey = hashApiKey(credential);
    const cached = this.cache.get(cacheKey);
    if (cached !== undefined) return cached.value;
    const pending = this.inFlight.get(cacheKey);
    if (pending !== undefined) return pending;
    const lookup = this.lookUp(credential, cacheKey).finally(() => this.inFlight.delete(cacheKey));
    this.inFlight.set(cacheKey, lookup);
    return lookup;
  }

  /** Forgets every cached lookup (e.g. right after an administrative change in the same process). */
  clearCache(): void {
    this.cache.clear();
  }

  private async lookUp(credential: string, cacheKey: string): Promise<ResolvedCredential | null> {
    const trustUntil = Date.now() + this.cacheTtlMs;
    if (looksLikeJwt(credential)) {
      const claims = await this.tokens.verify(credential);
      const resolved = claims === null ? null : await this.resolveToken(claims);
      // A token must not outlive its own expiry in the cache.
      this.cache.set(cacheKey, resolved, Math.min(trustUntil, claims?.expiresAtMs ?? trustUntil));
      return resolved;
    }
    const resolved = await this.resolveApiKey(cacheKey);
    this.cache.set(cacheKey, resolved, trustUntil);
    return resolved;
  }

  private async resolveApiKey(keyHash: string): Promise<ResolvedCredential | null> {
    const rows: ApiKeyRow[] = await this.dataSource.query(API_KEY_QUERY, [keyHash]);
    const row = rows[0];
    if (row === undefined) return null;
    return freeze({
      kind: row.kind,
      keyId: row.id,
      organizationId: row.organization_id,
      workspaceId: row.workspace_id,
      memberId: row.member_id,
      internId: row.intern_id,
      scopes: [],
      memberActive: row.member_id === null ? true : row.member_active === true,
      organization: {
        programme: row.programme,
        lifecycleWrites: row.lifecycle_writes,
        chatappInstallRequired: row.chatapp_install_required,
      },
      workspaceChatappInstalled: row.workspace_id === null ? false : row.workspace_chatapp_installed,
    });
  }

  private async resolveToken(claims: AccessTokenClaims): Promise<ResolvedCredential | null> {
    const rows: MemberRow[] = await this.dataSource.query(TOKEN_MEMBER_QUERY, [
      claims.memberId,
      claims.organizationId,
      claims.workspaceId,
    ]);
    const row = rows[0];
    if (row === undefined) return null;
    return freeze({
      kind: 'oauth',
      keyId: null,
      organizationId: claims.organizationId,
      workspaceId: row.workspace_id,
      memberId: claims.memberId,
      internId: null,
      scopes: claims.scopes,
      memberActive: row.member_active,
      organization: {
        programme: row.programme,
        lifecycleWrites: row.lifecycle_writes,
        chatappInstallRequired: row.chatapp_install_required,
      },
      workspaceChatappInstalled: row.workspace_chatapp_installed,
    });
  }
}

/** Cached results are shared between requests, so nobody may change one in place. */
function freeze(credential: ResolvedCredential): ResolvedCredential {
  Object.freeze(credential.scopes);
  Object.freeze(credential.organization);
  return Object.freeze(credential);
}
