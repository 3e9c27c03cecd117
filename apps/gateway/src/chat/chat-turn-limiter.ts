import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { DataSource } from 'typeorm';
// typeorm's exports map only gives types to deep paths through its "./*.js" entry.
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { IDENTITY_SCHEMA } from '@interns/identity';

/** Created by the identity migration CreateChatTurnLimits1763800000000. */
const TABLE_NAME = 'chat_turn_limits';
const WINDOW_SECONDS = 60;

export interface ChatTurnLimiterOptions {
  /** An initialized PostgreSQL DataSource of the identity schema (the gateway's own pool). */
  dataSource: DataSource;
  turnsPerMinute: number;
}

/** `retryAfterSeconds` is an integer in [1, 60], ready for the `Retry-After` header. */
export type TurnVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * CONTRACT section 8: per caller per intern, N turns per fixed 60 s window across chat prompts, invoke
 * and signing. Counters live in PostgreSQL so every gateway replica draws from the same budget.
 * A store failure rejects (the caller answers 500): the limiter fails closed, it never guesses.
 */
export class ChatTurnLimiter {
  private readonly limiter: RateLimiterPostgres;

  constructor(options: ChatTurnLimiterOptions) {
    if (!Number.isInteger(options.turnsPerMinute) || options.turnsPerMinute < 1) {
      throw new Error(`turnsPerMinute must be a positive integer, got ${options.turnsPerMinute}`);
    }
    this.limiter = new RateLimiterPostgres({
      storeClient: poolOf(options.dataSource),
      storeType: 'pool',
      schemaName: IDENTITY_SCHEMA,
      tableName: TABLE_NAME,
      // The migration owns the table; no replica issues DDL at runtime.
      tableCreated: true,
      // Rows are hashed keys, so the prefix adds nothing but length.
      keyPrefix: '',
      points: options.turnsPerMinute,
      duration: WINDOW_SECONDS,
      // Sweeps long-expired rows every few minutes so the table does not keep every pair ever seen.
      clearExpiredByTimeout: true,
    });
  }

  /** Counts one turn for caller (e.g. "member:<id>" or "key:<id>") on intern. */
  async consume(caller: string, internId: string): Promise<TurnVerdict> {
    try {
      await this.limiter.consume(turnKey(caller, internId));
      return { allowed: true };
    } catch (error) {
      // The library rejects with a RateLimiterRes when over the limit and with the store's error otherwise.
      if (error instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: retryAfterSeconds(error) };
      throw error;
    }
  }
}

/**
 * The pool TypeORM's postgres driver keeps as `master`; the limiter shares it rather than opening its own.
 * Taken once: after the DataSource is destroyed the ended pool rejects every query, which is what we want.
 */
function poolOf(dataSource: DataSource): pg.Pool {
  if (dataSource.options.type !== 'postgres') {
    throw new Error(`ChatTurnLimiter needs a postgres DataSource, got ${dataSource.options.type}`);
  }
  const pool = (dataSource.driver as PostgresDriver).master as pg.Pool | undefined;
  if (pool === undefined) throw new Error('ChatTurnLimiter needs an initialized DataSource');
  return pool;
}

/**
 * A fixed-length key that cannot collide between (caller, intern) pairs: the pair is JSON-encoded before
 * hashing so no separator inside a caller id can shift the boundary, and the hash fits varchar(255).
 */
function turnKey(caller: string, internId: string): string {
  return createHash('sha256').update(JSON.stringify([caller, internId])).digest('base64url');
}

/** Whole seconds until the window ends, clamped to [1, 60] (replica clock skew can stretch the raw value). */
function retryAfterSeconds(refusal: RateLimiterRes): number {
  return Math.min(WINDOW_SECONDS, Math.max(1, Math.ceil(refusal.msBeforeNext / 1000)));
}
