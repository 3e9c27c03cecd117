import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, errors, JWTPayload, jwtVerify, JWTVerifyGetKey } from 'jose';
import { isUuid, LOCAL_OIDC_ISSUER, OAUTH_AUDIENCE } from '@interns/contracts';
import { LOCAL_OIDC_ALGORITHM, LocalOidcIssuer, LocalOidcKeyLocation } from './local-oidc-issuer';

/** The external issuer, if any; else the local development issuer's keys (KEYS_DIR). */
export interface OidcOptions extends LocalOidcKeyLocation {
  /** OIDC_ISSUER; null trusts the local development issuer. */
  issuer: string | null;
  /** OIDC_JWKS_URL: the issuer's keys over HTTPS. */
  jwksUrl: string | null;
  /** OIDC_JWKS_FILE: the issuer's keys from a local JWKS file. */
  jwksFile: string | null;
}

/** The claims the platform relies on, after signature, expiry, audience and issuer were checked. */
export interface AccessTokenClaims {
  memberId: string;
  organizationId: string;
  workspaceId: string;
  scopes: string[];
  /** Expiry, milliseconds since the epoch. */
  expiresAtMs: number;
}

/**
 * Verifies OAuth access tokens (JWTs) against the configured issuer's keys. Keys come from, in order:
 * OIDC_JWKS_URL; OIDC_JWKS_FILE; the issuer's discovery document when only OIDC_ISSUER is set; the
 * local development issuer under KEYS_DIR when nothing is configured.
 */
export class OAuthTokenVerifier {
  private readonly issuer: string;
  private keys: Promise<JWTVerifyGetKey> | null = null;

  constructor(private readonly options: OidcOptions) {
    this.issuer = options.issuer ?? LOCAL_OIDC_ISSUER;
  }

  /** The claims of a valid token; null for any token that must be refused (401). */
  async verify(token: string): Promise<AccessTokenClaims | null> {
    const keys = await this.keySet();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.issuer,
        audience: OAUTH_AUDIENCE,
        requiredClaims: ['exp', 'sub'],
        ...(this.usesLocalIssuer() ? { algorithms: [LOCAL_OIDC_ALGORITHM, 'Ed25519'] } : {}),
      }));
    } catch (error) {
      if (isRefusal(error)) return null;
      throw error;
    }
    return claimsOf(payload);
  }

  private usesLocalIssuer(): boolean {
    const { issuer, jwksUrl, jwksFile } = this.options;
    return issuer === null && jwksUrl === null && jwksFile === null;
  }

  /** Loaded on first use and kept; a failed load (e.g. file missing) is retried on the next token. */
  private keySet(): Promise<JWTVerifyGetKey> {
    if (this.keys === null) {
      this.keys = this.loadKeySet();
      this.keys.catch(() => {
        this.keys = null;
      });
    }
    return this.keys;
  }

  private async loadKeySet(): Promise<JWTVerifyGetKey> {
    const { issuer, jwksUrl, jwksFile, keysDir, legacyDataDir } = this.options;
    if (jwksUrl !== null) return createRemoteJWKSet(new URL(jwksUrl));
    if (jwksFile !== null) {
      const text = await readFile(jwksFile, 'utf8');
      try {
        return createLocalJWKSet(JSON.parse(text));
      } catch (error) {
        throw new Error(`OIDC_JWKS_FILE ${jwksFile} is not a JWK set: ${(error as Error).message}`, { cause: error });
      }
    }
    if (issuer !== null) return createRemoteJWKSet(await discoverJwksUri(issuer));
    const local = await LocalOidcIssuer.open({ keysDir, legacyDataDir });
    return createLocalJWKSet(local.jwks());
  }
}

async function discoverJwksUri(issuer: string): Promise<URL> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`OIDC discovery at ${url} answered ${response.status}`);
  const document = (await response.json()) as { jwks_uri?: unknown };
  if (typeof document.jwks_uri !== 'string') throw new Error(`OIDC discovery at ${url} has no jwks_uri`);
  return new URL(document.jwks_uri);
}

/**
 * Token problems (bad signature, expired, wrong audience or issuer, malformed, unknown kid) mean 401.
 * An unreachable or broken key source is the platform's fault and propagates instead (500).
 */
function isRefusal(error: unknown): boolean {
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return false;
  return error instanceof errors.JOSEError;
}

function claimsOf(payload: JWTPayload): AccessTokenClaims | null {
  const { sub, exp } = payload;
  const org = payload['org'];
  const workspaceId = payload['workspace_id'];
  const scope = payload['scope'] ?? '';
  if (typeof sub !== 'string' || sub === '' || typeof org !== 'string' || org === '') return null;
  if (!isUuid(workspaceId) || typeof scope !== 'string' || typeof exp !== 'number') return null;
  return {
    memberId: sub,
    organizationId: org,
    workspaceId: workspaceId.toLowerCase(),
    scopes: scope.split(' ').filter((s) => s !== ''),
    expiresAtMs: exp * 1000,
  };
}
