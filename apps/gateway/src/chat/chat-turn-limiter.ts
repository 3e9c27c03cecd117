import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { type BudgetVerdict, MinuteBudget } from '../auth/minute-limiter';

/** Created by the identity migration CreateChatTurnLimits1763800000000. */
const TABLE_NAME = 'chat_turn_limits';

export interface ChatTurnLimiterOptions {
  /** An initialized PostgreSQL DataSource of the identity schema (the gateway's own pool). */
  dataSource: DataSource;
  turnsPerMinute: number;
}

export type TurnVerdict = BudgetVerdict;

/**
 * CONTRACT section 8: per caller per intern, N turns per fixed 60 s window across chat prompts, invoke
 * and signing. Counters live in PostgreSQL so every gateway replica draws from the same budget.
 */
export class ChatTurnLimiter {
  private readonly budget: MinuteBudget;

  constructor(options: ChatTurnLimiterOptions) {
    this.budget = new MinuteBudget({
      dataSource: options.dataSource,
      tableName: TABLE_NAME,
      perMinute: options.turnsPerMinute,
      name: 'turnsPerMinute',
    });
  }

  /** Counts one turn for caller (e.g. "member:<id>" or "key:<id>") on intern. */
  consume(caller: string, internId: string): Promise<TurnVerdict> {
    return this.budget.consume(turnKey(caller, internId));
  }
}

/**
 * A fixed-length key that cannot collide between (caller, intern) pairs: the pair is JSON-encoded before
 * hashing so no separator inside a caller id can shift the boundary, and the hash fits varchar(255).
 */
function turnKey(caller: string, internId: string): string {
  return createHash('sha256').update(JSON.stringify([caller, internId])).digest('base64url');
}
