import { createHash } from 'node:crypto';
import { DOOR_INVOKE_ROUTE, INVOKE_HEADERS } from '@interns/contracts';
import type { ClaimDaemonNonceReply, DaemonSigningKeysReply, Subjects } from '@interns/contracts';
import { verifyInvokeRequest, type InvokeRefusal, type InvokeVerification, type NonceStore } from '@interns/daemon-signing';
import type { RpcClient } from '@interns/messaging';
import { apiError, type HttpError } from '../http/http-errors';

type Deadline = { timeoutMs: number; correlationId: string };

export interface DoorSignaturesOptions {
  rpc: RpcClient;
  subjects: Subjects['lifecycle'];
  /** AUTH_CACHE_TTL_MS: how long the signing JWKS is reused before it is asked for again. */
  ttlMs: number;
  now?: () => number;
}

/** What one signed invoke brings to be checked. */
export interface SignedInvoke {
  headers: Record<string, string | string[] | undefined>;
  internId: string;
  /** The daemon token's member: the signature must be made for the same one. */
  memberId: string;
  /** The body bytes exactly as received. */
  body: Buffer;
  /** The request target as received (path and query): what the signature's route must name. */
  target: string;
  deadline: Deadline;
}

/** CONTRACT section 20: a door invoke's signature is at most a minute old. */
export const DOOR_SIGNATURE_MAX_AGE_SECONDS = 60;

/** Refusals a newer JWKS could turn around: the signing key rotated since it was cached. */
const KEY_REFUSALS: ReadonlySet<InvokeRefusal> = new Set(['bad_signature', 'unknown_key', 'no_usable_key']);

/**
 * The door's check of a signed `POST /api/invoke` (interface section 20), with libs/daemon-signing's verifier: a v2
 * signature over this exact body for this route, its timestamp within 60 s, made for the token's member, and its
 * nonce claimed through lifecycle (`claim-daemon-nonce`), so it is used once across every gateway replica. Any
 * fault: 401 `invalid_signature`, its message saying which.
 */
export class DoorSignatures {
  private jwks: { value: DaemonSigningKeysReply; fetchedAt: number } | null = null;

  constructor(private readonly options: DoorSignaturesOptions) {}

  async check(invoke: SignedInvoke): Promise<HttpError | null> {
    // Before anything is claimed: a request signed for another member must not burn that member's nonce.
    if (invoke.headers[INVOKE_HEADERS.user] !== invoke.memberId) {
      return invalidSignature(`${INVOKE_HEADERS.user} must be the daemon token's member`);
    }
    const bodySha256 = createHash('sha256').update(invoke.body).digest('hex');
    const cached = this.jwks !== null;
    let verdict = await this.verify(invoke, bodySha256, await this.signingKeys(invoke.deadline, false));
    if (!verdict.ok && cached && KEY_REFUSALS.has(verdict.reason)) {
      verdict = await this.verify(invoke, bodySha256, await this.signingKeys(invoke.deadline, true));
    }
    return verdict.ok ? null : invalidSignature(verdict.message);
  }

  private verify(invoke: SignedInvoke, bodySha256: string, jwks: DaemonSigningKeysReply): Promise<InvokeVerification> {
    return verifyInvokeRequest({
      headers: invoke.headers,
      internId: invoke.internId,
      bodySha256,
      method: DOOR_INVOKE_ROUTE.method,
      path: invoke.target,
      jwks,
      nonces: new LifecycleNonceStore(this.options.rpc, this.options.subjects.claimDaemonNonce, invoke.deadline),
      nowSeconds: Math.floor((this.options.now ?? Date.now)() / 1000),
      // The contract's window: a signature at most 60 s old (or ahead, for clock skew).
      maxSkewSeconds: DOOR_SIGNATURE_MAX_AGE_SECONDS,
      minVersion: 'v2',
    });
  }

  private async signingKeys(deadline: Deadline, fresh: boolean): Promise<DaemonSigningKeysReply> {
    const now = (this.options.now ?? Date.now)();
    if (!fresh && this.jwks !== null && now - this.jwks.fetchedAt < this.options.ttlMs) return this.jwks.value;
    const value = await this.options.rpc.request<DaemonSigningKeysReply>(this.options.subjects.daemonSigningKeys, {}, deadline);
    this.jwks = { value, fetchedAt: now };
    return value;
  }
}

/** The verifier's NonceStore over lifecycle's shared table: a claim is one atomic insert in PostgreSQL. */
class LifecycleNonceStore implements NonceStore {
  constructor(
    private readonly rpc: RpcClient,
    private readonly subject: string,
    private readonly deadline: Deadline,
  ) {}

  async claim(nonce: string, expiresAtSeconds: number): Promise<boolean> {
    const reply = await this.rpc.request<ClaimDaemonNonceReply>(this.subject, { nonce, expiresAt: expiresAtSeconds }, this.deadline);
    return reply.claimed;
  }
}

function invalidSignature(message: string): HttpError {
  return apiError('invalid_signature', message);
}
