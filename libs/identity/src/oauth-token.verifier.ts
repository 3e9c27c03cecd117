import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, errors, JWTPayload, jwtVerify, JWTVerifyGetKey } from 'jose';
import { DEFAULT_OIDC_ALGORITHMS, DEFAULT_OIDC_MAX_TOKEN_AGE_S, isUuid, LOCAL_OIDC_ISSUER, OAUTH_AUDIENCE } from '@interns/contracts';
import { LOCAL_OIDC_ALGORITHM, LocalOidcIssuer, LocalOidcKeyLocation } from './local-oidc-issuer';

/** The external issuer, if any; else the local development issuer's keys (KEYS_DIR). */
export interface OidcOptions extends LocalOidcKeyLocation {
  /** OIDC_ISSUER; null trusts the local development issuer. */
  issuer: string | null;
  /** OIDC_JWKS_URL: the issuer's keys over HTTPS. */
  jwksUrl: string | null;
  /** OIDC_JWKS_FILE: the issuer's keys from a local JWKS file. */
  jwksFile: string | null;
  /** OIDC_LOCAL_DEV: trust the local development issuer when no external one is configured; false refuses every token then. */
  localDev: boolean;
  /** OIDC_ALGORITHMS: what an external issuer's tokens may be signed with (the local issuer's is fixed). */
  algorithms?: readonly string[];
  /** OIDC_MAX_TOKEN_AGE_S: a token that may live longer (exp - iat), or was issued longer ago, is refused. */
  maxTokenAgeSeconds?: number;
  /** The first pause after a failed key fetch; it doubles per failure up to 5 minutes. */
  keyFetchBackoffMs?: number;
}

const DEFAULT_KEY_FETCH_BACKOFF_MS = 5000;
const MAX_KEY_FETCH_BACKOFF_MS = 300000;

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
 * local development issuer under KEYS_DIR when nothing is configured and OIDC_LOCAL_DEV=true (otherwise no
 * token is valid). Only the allowed algorithms, and only tokens with a lifetime within maxTokenAgeSeconds.
 */
export class OAuthTokenVerifier {
  private readonly issuer: string;
  private readonly algorithms: string[];
  private readonly maxTokenAgeSeconds: number;
  private readonly keySource: BackedOffKeySource;
  private keys: Promise<JWTVerifyGetKey> | null = null;

  constructor(private readonly options: OidcOptions) {
    this.issuer = options.issuer ?? LOCAL_OIDC_ISSUER;
    this.algorithms = this.usesLocalIssuer() ? [LOCAL_OIDC_ALGORITHM, 'Ed25519'] : [...(options.algorithms ?? DEFAULT_OIDC_ALGORITHMS)];
    this.maxTokenAgeSeconds = options.maxTokenAgeSeconds ?? DEFAULT_OIDC_MAX_TOKEN_AGE_S;
    this.keySource = new BackedOffKeySource(options.keyFetchBackoffMs ?? DEFAULT_KEY_FETCH_BACKOFF_MS);
  }

  /** The claims of a valid token; null for any token that must be refused (401). */
  async verify(token: string): Promise<AccessTokenClaims | null> {
    if (this.usesLocalIssuer() && !this.options.localDev) return null;
    const keys = await this.keySet();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.issuer,
        audience: OAUTH_AUDIENCE,
        requiredClaims: ['exp', 'iat', 'sub'],
        algorithms: this.algorithms,
        maxTokenAge: this.maxTokenAgeSeconds,
      }));
    } catch (error) {
      if (isRefusal(error)) return null;
      throw error;
    }
    // maxTokenAge bounds only how long ago iat was; a token minted to live longer is refused outright.
    if ((payload.exp as number) - (payload.iat as number) > this.maxTokenAgeSeconds) return null;
    return claimsOf(payload);
  }

  private usesLocalIssuer(): boolean {
    const { issuer, jwksUrl, jwksFile } = this.options;
    return issuer === null && jwksUrl === null && jwksFile === null;
  }

  /** Loaded on first use and kept; a failed load (e.g. discovery down) is retried only after a backoff. */
  private keySet(): Promise<JWTVerifyGetKey> {
    if (this.keys === null) {
      this.keys = this.keySource.attempt(() => this.loadKeySet());
      this.keys.catch(() => {
        this.keys = null;
      });
    }
    return this.keys;
  }

  private async loadKeySet(): Promise<JWTVerifyGetKey> {
    const { issuer, jwksUrl, jwksFile, keysDir, legacyDataDir } = this.options;
    if (jwksUrl !== null) return this.remote(new URL(jwksUrl));
    if (jwksFile !== null) {
      const text = await readFile(jwksFile, 'utf8');
      try {
        return createLocalJWKSet(JSON.parse(text));
      } catch (error) {
        throw new Error(`OIDC_JWKS_FILE ${jwksFile} is not a JWK set: ${(error as Error).message}`, { cause: error });
      }
    }
    if (issuer !== null) return this.remote(await discoverJwksUri(issuer));
    const local = await LocalOidcIssuer.open({ keysDir, legacyDataDir });
    return createLocalJWKSet(local.jwks());
  }

  /**
   * jose keeps a fetched set and refetches at most every 30 s for an unknown kid, but retries a failed fetch
   * on every token; the wrapper answers those tokens with the last failure until the backoff has passed.
   */
  private remote(url: URL): JWTVerifyGetKey {
    const remote = createRemoteJWKSet(url, { timeoutDuration: 5000 });
    return (header, token) =>
      this.keySource.attempt(async () => {
        try {
          return await remote(header, token);
        } catch (error) {
          if (isTokenProblem(error)) throw new TokenRefusal(error);
          throw new KeySourceUnavailable(url, error);
        }
      }).catch((error: unknown) => {
        throw error instanceof TokenRefusal ? error.cause : error;
      });
  }
}

/** A key lookup that failed because of the token (no key for its kid), not the source: no backoff. */
class TokenRefusal extends Error {
  constructor(override readonly cause: unknown) {
    super('token refused');
  }
}

/** The key source could not be read: the platform's fault (500), never the token's (401). */
export class KeySourceUnavailable extends Error {
  constructor(url: URL, cause: unknown) {
    super(`the OIDC key set at ${url.href} could not be fetched: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'KeySourceUnavailable';
  }
}

/**
 * Remembers the last failure of a key source and answers with it, without trying, until the backoff has
 * passed (5 s, doubling to 5 minutes; a success resets it), so a flood of tokens costs one fetch per window.
 */
class BackedOffKeySource {
  private failure: { error: unknown; at: number; until: number } | null = null;
  private backoffMs: number;

  constructor(private readonly firstBackoffMs: number) {
    this.backoffMs = firstBackoffMs;
  }

  async attempt<T>(load: () => Promise<T>): Promise<T> {
    const startedAt = Date.now();
    if (this.failure !== null && startedAt < this.failure.until) throw this.failure.error;
    try {
      const value = await load();
      this.failure = null;
      this.backoffMs = this.firstBackoffMs;
      return value;
    } catch (error) {
      if (error instanceof TokenRefusal) throw error;
      // Concurrent attempts share one fetch (jose coalesces them): its failure counts once.
      if (this.failure !== null && this.failure.at >= startedAt) throw error;
      this.failure = { error, at: Date.now(), until: Date.now() + this.backoffMs };
      this.backoffMs = Math.min(this.backoffMs * 2, MAX_KEY_FETCH_BACKOFF_MS);
      throw error;
    }
  }
}

/** What a remote key set rejects with because of the token itself rather than the fetch. */
function isTokenProblem(error: unknown): boolean {
  return error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JOSENotSupported;
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
  if (error instanceof KeySourceUnavailable) return false;
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
