import { randomUUID } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, JWK, SignJWT } from 'jose';
import { DEFAULT_OIDC_MAX_TOKEN_AGE_S, LOCAL_OIDC_DIR, LOCAL_OIDC_ISSUER, OAUTH_AUDIENCE } from '@interns/contracts';
import { makePrivateDirectory, moveLegacyFile, publishNoClobber, readFileIfExists, temporaryPath } from '@interns/files';

export const LOCAL_OIDC_ALGORITHM = 'EdDSA';
export const LOCAL_OIDC_PRIVATE_KEY_FILE = 'signing-key.private.jwk.json';
export const LOCAL_OIDC_JWKS_FILE = 'jwks.json';
/** Both files, the public JWKS too: nothing in the keys directory is for other users. */
const KEY_FILE_MODE = 0o600;

export interface LocalTokenClaims {
  /** The member id. */
  sub: string;
  org: string;
  workspace_id: string;
  /** Space-separated scopes, e.g. `interns vault:read`. */
  scope: string;
  /** Lifetime from now; zero or negative yields an already expired token (useful in tests). */
  ttlSeconds: number;
}

export interface JsonWebKeySet {
  keys: JWK[];
}

type SigningKey = Awaited<ReturnType<typeof importJWK>>;

/** Where the development issuer keeps its key pair. */
export interface LocalOidcKeyLocation {
  /** KEYS_DIR: the pair lives in `<KEYS_DIR>/dev-oidc/`. */
  keysDir: string;
  /** DATA_DIR of an installation that predates KEYS_DIR: a pair found in `<DATA_DIR>/dev-oidc/` is moved once. */
  legacyDataDir?: string;
}

export interface LocalOidcIssuerOptions extends LocalOidcKeyLocation {
  /** OIDC_MAX_TOKEN_AGE_S: a longer lifetime is refused here, since the gateway would refuse the token anyway. */
  maxTokenAgeSeconds?: number;
}

/** The directory of the development issuer's key files under KEYS_DIR (before KEYS_DIR: under DATA_DIR). */
export function localOidcDir(keysDir: string): string {
  return join(resolve(keysDir), LOCAL_OIDC_DIR);
}

/**
 * The local development OIDC issuer: one Ed25519 key pair kept under `<KEYS_DIR>/dev-oidc/`, used by
 * `admin oauth-token` to sign access tokens and by the gateway to verify them when no external issuer
 * is configured. Whichever process starts first creates the key (or moves the one an earlier release kept
 * under DATA_DIR, so tokens it signed stay valid); every other one loads the same key.
 */
export class LocalOidcIssuer {
  private constructor(
    private readonly privateKey: SigningKey,
    private readonly publicJwk: JWK,
    readonly kid: string,
    readonly directory: string,
    readonly maxTokenAgeSeconds: number,
  ) {}

  static async open(location: LocalOidcIssuerOptions): Promise<LocalOidcIssuer> {
    const directory = localOidcDir(location.keysDir);
    await makePrivateDirectory(directory, location.keysDir);
    const privatePath = join(directory, LOCAL_OIDC_PRIVATE_KEY_FILE);
    let privateJwk = await readKeyFile(privatePath);
    if (privateJwk === null && location.legacyDataDir !== undefined) {
      // Only the private key moves: the public JWKS is rewritten here below, and the old one stays valid
      // (same key) for anything still reading it there, e.g. an OIDC_JWKS_FILE.
      await moveLegacyFile({
        from: join(localOidcDir(location.legacyDataDir), LOCAL_OIDC_PRIVATE_KEY_FILE),
        to: privatePath,
        mode: KEY_FILE_MODE,
      });
      privateJwk = await readKeyFile(privatePath);
    }
    if (privateJwk === null) {
      await publishNoClobber(privatePath, JSON.stringify(await generatePrivateJwk(), null, 2) + '\n', KEY_FILE_MODE);
      privateJwk = await readKeyFile(privatePath);
      if (privateJwk === null) throw new Error(`${privatePath} vanished while it was being created`);
    }
    const { d: _d, ...publicFields } = privateJwk;
    const publicJwk: JWK = { ...publicFields, alg: LOCAL_OIDC_ALGORITHM, use: 'sig', kid: privateJwk.kid };
    const privateKey = await importJWK({ ...privateJwk, alg: LOCAL_OIDC_ALGORITHM }, LOCAL_OIDC_ALGORITHM);
    const maxTokenAgeSeconds = location.maxTokenAgeSeconds ?? DEFAULT_OIDC_MAX_TOKEN_AGE_S;
    const issuer = new LocalOidcIssuer(privateKey, publicJwk, privateJwk.kid as string, directory, maxTokenAgeSeconds);
    await issuer.publishJwks();
    return issuer;
  }

  /** Path of the public JWKS file, which external tools (or OIDC_JWKS_FILE) may use. */
  get jwksPath(): string {
    return join(this.directory, LOCAL_OIDC_JWKS_FILE);
  }

  jwks(): JsonWebKeySet {
    return { keys: [{ ...this.publicJwk }] };
  }

  async sign(claims: LocalTokenClaims): Promise<string> {
    if (claims.ttlSeconds > this.maxTokenAgeSeconds) {
      throw new RangeError(`a token may live at most ${this.maxTokenAgeSeconds} s (OIDC_MAX_TOKEN_AGE_S), asked for ${claims.ttlSeconds} s`);
    }
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ org: claims.org, workspace_id: claims.workspace_id, scope: claims.scope })
      .setProtectedHeader({ alg: LOCAL_OIDC_ALGORITHM, kid: this.kid, typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuer(LOCAL_OIDC_ISSUER)
      .setAudience(OAUTH_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + Math.trunc(claims.ttlSeconds))
      .setJti(randomUUID())
      .sign(this.privateKey);
  }

  /** The public half, rewritten atomically only when missing or different. */
  private async publishJwks(): Promise<void> {
    const text = JSON.stringify(this.jwks(), null, 2) + '\n';
    const current = await readFile(this.jwksPath, 'utf8').catch(() => null);
    if (current === text) return;
    const temporary = temporaryPath(this.jwksPath);
    await writeFile(temporary, text, { mode: KEY_FILE_MODE });
    await rename(temporary, this.jwksPath);
  }
}

async function generatePrivateJwk(): Promise<JWK> {
  const { privateKey, publicKey } = await generateKeyPair(LOCAL_OIDC_ALGORITHM, { crv: 'Ed25519', extractable: true });
  const kid = await calculateJwkThumbprint(await exportJWK(publicKey));
  return { ...(await exportJWK(privateKey)), kid, alg: LOCAL_OIDC_ALGORITHM };
}

/** The private JWK, or null when the file does not exist yet. */
async function readKeyFile(path: string): Promise<(JWK & { kid: string; d: string }) | null> {
  // Only the copy fallback can expose a half-written file, and only for a moment: retry briefly.
  for (let attempt = 0; ; attempt += 1) {
    const text = await readFileIfExists(path);
    if (text === null) return null;
    try {
      const jwk = JSON.parse(text) as JWK;
      if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.d !== 'string' || typeof jwk.x !== 'string' || typeof jwk.kid !== 'string') {
        throw new Error('not an Ed25519 private JWK with a kid');
      }
      return jwk as JWK & { kid: string; d: string };
    } catch (error) {
      if (attempt >= 20) throw new Error(`${path} is not a usable signing key: ${(error as Error).message}`, { cause: error });
      await sleep(25);
    }
  }
}
