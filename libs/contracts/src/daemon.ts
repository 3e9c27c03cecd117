/**
 * Daemon access and request signing (CONTRACT section 8): request and reply shapes between the gateway,
 * lifecycle and the admin command, the signing headers, and the sign body's rules.
 */
import { z } from 'zod';
import { DomainError } from './errors';
import type { InternCommandRequest, InternStatus } from './intern';

/** The headers a daemon receives with a signed invoke; also the keys of the sign answer. */
export const INVOKE_HEADERS = {
  signature: 'x-intern-invoke-signature',
  timestamp: 'x-intern-invoke-timestamp',
  user: 'x-intern-invoke-user',
  signatureV2: 'x-intern-invoke-signature-v2',
  nonce: 'x-intern-invoke-nonce',
} as const;

/**
 * Methods a signed route may name (CONTRACT section 16): an invoke is a POST, and a signature for any other
 * method would be one a daemon's read-only routes could be made to accept.
 */
export const SIGNABLE_METHODS = ['POST'] as const;
export type SignableMethod = (typeof SIGNABLE_METHODS)[number];

/**
 * A route path: starts with '/', printable ASCII without spaces (a request target as sent, percent-encoded).
 * No control characters, so a path can never add a line to the newline-separated signing string.
 */
export const ROUTE_PATH_PATTERN = /^\/[\x21-\x7E]*$/;
export const ROUTE_PATH_MAX_CHARS = 2048;
export const BODY_SHA256_PATTERN = /^[0-9a-f]{64}$/;

export interface SignRoute {
  method: SignableMethod;
  path: string;
}

export interface DaemonSignBody {
  bodySha256: string;
  route?: SignRoute;
}

export type DaemonAccessRequest = InternCommandRequest;

/** 200 of `GET /interns/{id}/daemon`. */
export interface DaemonAccessReply {
  origin: string;
  token: string;
}

export interface DaemonSignRequest extends InternCommandRequest {
  body: DaemonSignBody;
}

/** 200 of `POST /interns/{id}/daemon/sign`; the v2 pair only when the body named a route. */
export interface DaemonSignReply {
  'x-intern-invoke-signature': string;
  'x-intern-invoke-timestamp': string;
  'x-intern-invoke-user': string;
  'x-intern-invoke-signature-v2'?: string;
  'x-intern-invoke-nonce'?: string;
}

/** One public key of the signing JWKS (RFC 8037 OKP, Ed25519); a type alias so it passes as a plain JWK record. */
export type DaemonSigningJwk = {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
};

/** `GET /api/v1/daemon/signing-keys`. */
export interface DaemonSigningKeysReply {
  keys: DaemonSigningJwk[];
}

/** A runtime asks whether a daemon token it was shown is good (`daemon-token-check`). */
export interface DaemonTokenCheckRequest {
  token: string;
}

export type DaemonTokenCheckReply =
  | { valid: true; internId: string; memberId: string; expiresAt: string }
  | { valid: false; internId: null; memberId: null; expiresAt: null };

/** The door asks which intern a request's Host names (`intern-by-hostname`); `hostname` normalized (lowercase, no port or root dot). */
export interface InternByHostnameRequest {
  hostname: string;
}

/** What the door needs of the intern behind a hostname; null: no intern has it (or it was torn down). */
export interface DoorIntern {
  id: string;
  name: string;
  status: InternStatus;
  organizationId: string;
  workspaceId: string;
}

export interface InternByHostnameReply {
  intern: DoorIntern | null;
}

/**
 * The door marks a v2 nonce used (`claim-daemon-nonce`) after its signature checked out; `expiresAt` (unix seconds)
 * is when the signature's timestamp leaves the window, after which the record may go.
 */
export interface ClaimDaemonNonceRequest {
  nonce: string;
  expiresAt: number;
}

/** false: the nonce was claimed before, by this or another gateway replica. */
export interface ClaimDaemonNonceReply {
  claimed: boolean;
}

/** The door's signed route (CONTRACT section 20): what a client names in `route` when it signs an invoke for the door. */
export const DOOR_INVOKE_ROUTE = { method: 'POST', path: '/api/invoke' } as const;

/** `GET /` at the door: the intern and the daemon token's member and expiry (CONTRACT section 20). */
export interface DoorIdentity {
  intern_id: string;
  name: string;
  status: InternStatus;
  member_id: string;
  expires_at: string;
}

/**
 * Admin, after an identity apply: members no longer active and organizations no longer in the programme lose
 * their daemon tokens (by the token's member, and by the organization of the token's intern).
 */
export interface RevokeDaemonTokensRequest {
  memberIds: string[];
  organizationIds: string[];
  correlationId: string;
}

export interface RevokeDaemonTokensReply {
  /** Tokens deleted by this request; 0 when a previous run already removed them. */
  revoked: number;
}

/** Operators (admin `audit`): the recorded reveals and signings of one intern. */
export interface DaemonAuditRequest {
  internId: string;
}

/** Reveals and signings (section 8), and terminals attached and detached (section 20). */
export type DaemonAuditKind = 'daemon_access' | 'signing' | 'terminal_attached' | 'terminal_detached';

export interface DaemonAuditEntry {
  kind: DaemonAuditKind;
  member_id: string;
  /** ISO 8601 UTC with milliseconds. */
  at: string;
}

/** Oldest first. */
export interface DaemonAuditReply {
  data: DaemonAuditEntry[];
}

export const signBodySchema = z.strictObject({
  bodySha256: z.string().regex(BODY_SHA256_PATTERN, 'must be 64 lowercase hex characters'),
  route: z
    .strictObject({
      method: z.enum(SIGNABLE_METHODS, 'must be "POST"'),
      path: z
        .string()
        .max(ROUTE_PATH_MAX_CHARS, `must be at most ${ROUTE_PATH_MAX_CHARS} characters`)
        .regex(ROUTE_PATH_PATTERN, "must start with '/' and hold printable ASCII without spaces"),
    })
    .optional(),
});

/** The sign body's rules; every refusal is DomainError('invalid_body'). */
export function parseDaemonSignBody(value: unknown): DaemonSignBody {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_body', 'body must be a JSON object');
  }
  const result = signBodySchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue?.code === 'unrecognized_keys') {
    const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    throw new DomainError('invalid_body', `${where}unknown field: ${issue.keys.join(', ')}`);
  }
  const path = issue?.path.join('.') ?? '';
  throw new DomainError('invalid_body', path ? `${path}: ${issue?.message}` : (issue?.message ?? 'invalid body'));
}
