import { createHash } from 'node:crypto';
import { type RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { DataSource } from 'typeorm';
import { minuteLimiter, retryAfterSecondsOf } from '../minute-limiter';

/** Created by the identity migration CreateChatTurnLimits1763800000000. */
const TABLE_NAME = 'chat_turn_limits';

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
    this.limiter = minuteLimiter({
      dataSource: options.dataSource,
      tableName: TABLE_NAME,
      perMinute: options.turnsPerMinute,
      name: 'turnsPerMinute',
    });
  }

  /** Counts one turn for caller (e.g. "member:<id>" or "key:<id>") on intern. */
  async consume(caller: string, internId: string): Promise<TurnVerdict> {
    try {
      await this.limiter.consume(turnKey(caller, internId));
      return { allowed: true };
    } catch (error) {
      // The library rejects with a RateLimiterRes when over the limit and with the store's error otherwise.
      if (error instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: retryAfterSecondsOf(error.msBeforeNext) };
      throw error;
    }
  }
}

/**
 * A fixed-length key that cannot collide between (caller, intern) pairs: the pair is JSON-encoded before
 * hashing so no separator inside a caller id can shift the boundary, and the hash fits varchar(255).
 */
function turnKey(caller: string, internId: string): string {
  return createHash('sha256').update(JSON.stringify([caller, internId])).digest('base64url');
}
