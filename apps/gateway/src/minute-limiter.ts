import { RateLimiterPostgres } from 'rate-limiter-flexible';
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

/** Whole seconds until the window ends, clamped to [1, 60] (replica clock skew can stretch the raw value). */
export function retryAfterSecondsOf(msBeforeNext: number): number {
  return Math.min(LIMIT_WINDOW_SECONDS, Math.max(1, Math.ceil(msBeforeNext / 1000)));
}
