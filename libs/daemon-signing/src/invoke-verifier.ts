import { createPublicKey, KeyObject, verify } from 'node:crypto';
import { INVOKE_HEADERS } from '@interns/contracts';
import type { NonceStore } from './nonce-store';
import { signingStringV1, signingStringV2 } from './signing-strings';

/** Node's `IncomingHttpHeaders`, a plain record, or a fetch `Headers`. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

/** A JWKS as served by `GET /api/v1/daemon/signing-keys` (other members and other keys are ignored). */
export interface JsonWebKeySetLike {
  keys: ReadonlyArray<Record<string, unknown>>;
}

export interface VerifyInvokeRequestOptions {
  headers: HeaderSource;
  /** The intern this daemon serves. */
  internId: string;
  /** SHA-256 (lowercase hex) of the body bytes the daemon received. */
  bodySha256: string;
  /** The request's method and path as received; required to check a v2 signature. */
  method?: string;
  path?: string;
  jwks: JsonWebKeySetLike;
  /** Defaults to the system clock. */
  nowSeconds?: number;
  /** How far the signed timestamp may lie from now, either way. */
  maxSkewSeconds?: number;
  nonces: NonceStore;
  /**
   * The oldest signature version accepted. Default `v2`: a v1 signature binds neither route nor nonce, so
   * a request whose v2 headers were stripped on the way must not pass as v1. `v1` only for callers that
   * never name a route.
   */
  minVersion?: 'v1' | 'v2';
}

/**
 * Optional: the `kid` of the JWKS key that made the signature. Present, only that key is tried and an
 * unknown kid is refused; absent, every key of the JWKS is tried (during a rotation it holds two).
 */
export const INVOKE_KEY_ID_HEADER = 'x-intern-invoke-key-id';

export type InvokeRefusal =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_out_of_window'
  | 'route_required'
  | 'version_too_old'
  | 'unknown_key'
  | 'no_usable_key'
  | 'bad_signature'
  | 'nonce_reused';

export type InvokeVerification =
  | { ok: true; version: 'v1' | 'v2'; user: string; timestamp: number; nonce: string | null }
  | { ok: false; reason: InvokeRefusal; message: string };

/** Signatures are made just before the invoke is sent; a minute covers clock skew and transit. */
export const DEFAULT_MAX_SKEW_SECONDS = 60;

const TIMESTAMP_PATTERN = /^\d{1,12}$/;
const BASE64_SIGNATURE_PATTERN = /^[A-Za-z0-9+/]{86}==$/;
const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
const MAX_USER_CHARS = 256;

/**
 * Checks a signed invoke as a daemon receives it. v2 (nonce and `x-intern-invoke-signature-v2` present) is
 * checked against the method and path; otherwise v1, refused unless `minVersion` is `v1`. In order: headers
 * well formed, the version allowed, timestamp within
 * `maxSkewSeconds` of now, signature by a key of the JWKS, and (v2) the nonce not seen before. The nonce is
 * claimed last, so a forged or stale request cannot burn a genuine nonce.
 */
export async function verifyInvokeRequest(options: VerifyInvokeRequestOptions): Promise<InvokeVerification> {
  const read = headerReader(options.headers);
  const timestamp = read(INVOKE_HEADERS.timestamp);
  const user = read(INVOKE_HEADERS.user);
  const signatureV1 = read(INVOKE_HEADERS.signature);
  const signatureV2 = read(INVOKE_HEADERS.signatureV2);
  const nonce = read(INVOKE_HEADERS.nonce);
  const keyId = read(INVOKE_KEY_ID_HEADER);
  if (
    timestamp === REPEATED ||
    user === REPEATED ||
    signatureV1 === REPEATED ||
    signatureV2 === REPEATED ||
    nonce === REPEATED ||
    keyId === REPEATED
  ) {
    return refuse('malformed_header', 'a signing header appears more than once');
  }
  const v2 = signatureV2 !== undefined && nonce !== undefined;
  if (!v2 && (options.minVersion ?? 'v2') === 'v2') {
    return refuse('version_too_old', `a v2 signature (${INVOKE_HEADERS.signatureV2} and ${INVOKE_HEADERS.nonce}) is required`);
  }
  const signature = v2 ? signatureV2 : signatureV1;
  if (timestamp === undefined) return refuse('missing_header', `${INVOKE_HEADERS.timestamp} is missing`);
  if (user === undefined) return refuse('missing_header', `${INVOKE_HEADERS.user} is missing`);
  if (signature === undefined) return refuse('missing_header', `${INVOKE_HEADERS.signature} is missing`);
  if (!TIMESTAMP_PATTERN.test(timestamp)) return refuse('malformed_header', `${INVOKE_HEADERS.timestamp} is not unix seconds`);
  if (!isMemberId(user)) return refuse('malformed_header', `${INVOKE_HEADERS.user} is not a member id`);
  if (!BASE64_SIGNATURE_PATTERN.test(signature)) return refuse('malformed_header', 'the signature is not a base64 Ed25519 signature');
  if (v2 && !NONCE_PATTERN.test(nonce)) return refuse('malformed_header', `${INVOKE_HEADERS.nonce} is not a base64url nonce`);

  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const maxSkew = options.maxSkewSeconds ?? DEFAULT_MAX_SKEW_SECONDS;
  const signedAt = Number(timestamp);
  if (Math.abs(now - signedAt) > maxSkew) {
    return refuse('timestamp_out_of_window', `the timestamp is more than ${maxSkew} s away from now`);
  }

  let message: string;
  if (v2) {
    if (options.method === undefined || options.path === undefined) {
      return refuse('route_required', 'a v2 signature needs the request method and path to check');
    }
    message = signingStringV2({
      internId: options.internId,
      timestamp,
      nonce,
      user,
      method: options.method,
      path: options.path,
      bodySha256: options.bodySha256,
    });
  } else {
    message = signingStringV1({ internId: options.internId, timestamp, user, bodySha256: options.bodySha256 });
  }

  const keys = usableKeys(options.jwks, keyId);
  if (keys.length === 0) {
    return keyId === undefined
      ? refuse('no_usable_key', 'the JWKS holds no Ed25519 signing key')
      : refuse('unknown_key', `the JWKS holds no Ed25519 signing key with kid "${keyId}"`);
  }
  const data = Buffer.from(message, 'utf8');
  const signatureBytes = Buffer.from(signature, 'base64');
  if (!keys.some((key) => verify(null, data, key, signatureBytes))) {
    return refuse('bad_signature', 'the signature does not match the request');
  }

  if (v2 && !(await options.nonces.claim(nonce, signedAt + maxSkew))) {
    return refuse('nonce_reused', 'the nonce was used before');
  }
  return { ok: true, version: v2 ? 'v2' : 'v1', user, timestamp: signedAt, nonce: v2 ? nonce : null };
}

/** A member id: 1-256 characters without control characters (a line break would shift the signing string). */
function isMemberId(value: string): boolean {
  if (value.length === 0 || value.length > MAX_USER_CHARS) return false;
  for (let i = 0; i < value.length; i += 1) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

function refuse(reason: InvokeRefusal, message: string): InvokeVerification {
  return { ok: false, reason, message };
}

const REPEATED = Symbol('repeated header');

/** Case-insensitive single-value lookup; REPEATED when a header came more than once. */
function headerReader(headers: HeaderSource): (name: string) => string | undefined | typeof REPEATED {
  if (typeof Headers !== 'undefined' && headers instanceof Headers) {
    return (name) => headers.get(name) ?? undefined;
  }
  const byName = new Map<string, string | string[] | undefined | typeof REPEATED>();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    byName.set(key, byName.has(key) ? REPEATED : value);
  }
  return (name) => {
    const value = byName.get(name);
    if (Array.isArray(value)) return value.length === 1 ? value[0] : REPEATED;
    return value;
  };
}

/** The JWKS's Ed25519 signing keys; with `kid`, only the one it names. */
function usableKeys(jwks: JsonWebKeySetLike, kid: string | undefined): KeyObject[] {
  const keys: KeyObject[] = [];
  for (const jwk of jwks.keys ?? []) {
    if (kid !== undefined && jwk.kid !== kid) continue;
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') continue;
    if (jwk.use !== undefined && jwk.use !== 'sig') continue;
    if (jwk.alg !== undefined && jwk.alg !== 'EdDSA') continue;
    try {
      keys.push(createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }));
    } catch {
      // A malformed key cannot verify anything; the others may.
    }
  }
  return keys;
}
