// door/: the door (interface section 20), an intern served at its own hostname: host routing, the checks in the
// contract's order, their caches, the routes and the terminal's upgrade.
import { createHash } from 'node:crypto';
import type { DaemonTokenCheckReply, Subjects } from '@interns/contracts';
import type { RpcClient } from '@interns/messaging';
import { TtlCache } from './ttl-cache';

/** Tokens remembered at once (valid and invalid alike). */
const MAX_TOKENS = 10_000;

/** A daemon token lifecycle vouched for: its intern, member and expiry. */
export type ValidDaemonToken = Extract<DaemonTokenCheckReply, { valid: true }>;

export interface DaemonTokenCacheOptions {
  rpc: RpcClient;
  subjects: Subjects['lifecycle'];
  /** AUTH_CACHE_TTL_MS: a revoked token is refused within this time. */
  ttlMs: number;
  now?: () => number;
}

/**
 * Lifecycle's `daemon-token-check`, cached for AUTH_CACHE_TTL_MS under the token's SHA-256 (the gateway keeps no
 * token in memory). Its expiry is honoured from the cache too; an intern's status change drops its tokens at once.
 */
export class DaemonTokenCache {
  private readonly checked: TtlCache<string, ValidDaemonToken | null>;

  constructor(private readonly options: DaemonTokenCacheOptions) {
    this.checked = new TtlCache(options.ttlMs, MAX_TOKENS, options.now);
  }

  /** The token's facts when lifecycle holds it valid (and it has not expired since); null otherwise. */
  async check(token: string, deadline: { timeoutMs: number; correlationId: string }): Promise<ValidDaemonToken | null> {
    const key = createHash('sha256').update(token, 'utf8').digest('base64url');
    let verdict = this.checked.get(key);
    if (verdict === undefined) {
      const reply = await this.options.rpc.request<DaemonTokenCheckReply>(this.options.subjects.daemonTokenCheck, { token }, deadline);
      verdict = reply.valid ? reply : null;
      this.checked.set(key, verdict);
    }
    if (verdict === null) return null;
    const now = this.options.now?.() ?? Date.now();
    return Date.parse(verdict.expiresAt) > now ? verdict : null;
  }

  evictIntern(internId: string): void {
    this.checked.deleteWhere((verdict) => verdict !== null && verdict.internId === internId);
  }
}
