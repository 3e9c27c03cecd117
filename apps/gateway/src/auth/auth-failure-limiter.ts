// auth/: who is asking and how often: the principal a credential stands for, the per-address limit on failed
// authentications, and the per-minute budget it shares with the chat turn and analytics query limiters.
import { createHash } from 'node:crypto';
import { type RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { DataSource } from 'typeorm';
import { BoundedTtlCache } from '@interns/identity';
import { minuteLimiter, retryAfterSecondsOf } from './minute-limiter';

/** Created by the identity migration CreateAuthFailureLimits1763900000000. */
const TABLE_NAME = 'auth_failure_limits';
/** Addresses blocked at once in one replica's memory; beyond, the oldest is forgotten (and counted again). */
const MAX_BLOCKED_ADDRESSES = 100000;

export interface AuthFailureLimiterOptions {
  /** An initialized PostgreSQL DataSource of the identity schema (the gateway's own pool). */
  dataSource: DataSource;
  failuresPerMinute: number;
}

/**
 * CONTRACT section 16: an address that collected `failuresPerMinute` 401s in a fixed 60 s window is answered
 * 429 until the window ends. Failures are counted in PostgreSQL, so every replica adds to one count; the
 * block itself is kept in the replica's memory, so the check before credential resolution costs no query
 * (a replica learns of a block from the shared count at the address's next failure there).
 */
export class AuthFailureLimiter {
  private readonly limiter: RateLimiterPostgres;
  private readonly blockedUntil = new BoundedTtlCache<number>(MAX_BLOCKED_ADDRESSES);

  constructor(private readonly options: AuthFailureLimiterOptions) {
    this.limiter = minuteLimiter({
      dataSource: options.dataSource,
      tableName: TABLE_NAME,
      perMinute: options.failuresPerMinute,
      name: 'failuresPerMinute',
    });
  }

  /** Whole seconds until the address may be heard again ([1, 60]), or null when it is not blocked. */
  retryAfterSeconds(address: string): number | null {
    const until = this.blockedUntil.get(address)?.value;
    if (until === undefined) return null;
    return retryAfterSecondsOf(until - Date.now());
  }

  /** Counts one 401 for the address; the one that reaches the limit starts the block. */
  async recordFailure(address: string): Promise<void> {
    let result: RateLimiterRes;
    try {
      result = await this.limiter.consume(addressKey(address));
    } catch (error) {
      // Over the limit already (failures counted by other replicas too): the library rejects with the result.
      if (!(error instanceof RateLimiterRes)) throw error;
      result = error;
    }
    if (result.consumedPoints >= this.options.failuresPerMinute) {
      const until = Date.now() + result.msBeforeNext;
      this.blockedUntil.set(address, until, until);
    }
  }
}

/** Fixed length whatever the address looks like (an IPv6 address, a forwarded value), and no address in the table. */
function addressKey(address: string): string {
  return createHash('sha256').update(address).digest('base64url');
}
