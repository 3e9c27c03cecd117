import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { DataSource } from 'typeorm';
import { poolOf } from '@interns/database';
import { IDENTITY_SCHEMA } from '@interns/identity';

/** The gateway's limiters count in fixed 60 s windows. */
export const LIMIT_WINDOW_SECONDS = 60;

/**
 * A limiter of `perMinute` points per key per fixed minute, counted in an `identity` table its migration
 * created, so every gateway replica draws from the same budget (the chat turn and authentication-failure
 * limiters). `name` says which setting `perMinute` came from, for the error on a bad value.
 */
export function minuteLimiter(options: { dataSource: DataSource; tableName: string; perMinute: number; name: string }): RateLimiterPostgres {
  if (!Number.isInteger(options.perMinute) || options.perMinute < 1) {
    throw new Error(`${options.name} must be a positive integer, got ${options.perMinute}`);
  }
  return new RateLimiterPostgres({
    storeClient: poolOf(options.dataSource),
    storeType: 'pool',
    schemaName: IDENTITY_SCHEMA,
    tableName: options.tableName,
    // The migration owns the table; no replica issues DDL at runtime.
    tableCreated: true,
    // Rows are hashed keys, so the prefix adds nothing but length.
    keyPrefix: '',
    points: options.perMinute,
    duration: LIMIT_WINDOW_SECONDS,
    // Sweeps long-expired rows every few minutes so the table does not keep every key ever seen.
    clearExpiredByTimeout: true,
  });
}

/** `retryAfterSeconds` is an integer in [1, 60], ready for the `Retry-After` header. */
export type BudgetVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * `perMinute` uses per key per fixed minute, shared by every gateway replica (a `minuteLimiter` table). A store
 * failure rejects (the caller answers 500): the budget fails closed, it never guesses.
 */
export class MinuteBudget {
  private readonly limiter: RateLimiterPostgres;

  constructor(options: { dataSource: DataSource; tableName: string; perMinute: number; name: string }) {
    this.limiter = minuteLimiter(options);
  }

  /** Counts one use for `key` (already a fixed-length hash: the table's key is varchar(255)). */
  async consume(key: string): Promise<BudgetVerdict> {
    try {
      await this.limiter.consume(key);
      return { allowed: true };
    } catch (error) {
      // The library rejects with a RateLimiterRes when over the limit and with the store's error otherwise.
      if (error instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: retryAfterSecondsOf(error.msBeforeNext) };
      throw error;
    }
  }
}

/** Whole seconds until the window ends, clamped to [1, 60] (replica clock skew can stretch the raw value). */
export function retryAfterSecondsOf(msBeforeNext: number): number {
  return Math.min(LIMIT_WINDOW_SECONDS, Math.max(1, Math.ceil(msBeforeNext / 1000)));
}
