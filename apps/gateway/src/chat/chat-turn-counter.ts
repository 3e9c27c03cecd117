import { apiError } from '../http/http-errors';
import type { ChatTurnLimiter } from './chat-turn-limiter';
import { HttpErrorException } from './http-error.exception';

/** The chat turn limiter as the routes use it (chat prompts, invoke, signing): one budget, one 429. */
export class ChatTurnCounter {
  constructor(
    private readonly limiter: ChatTurnLimiter,
    /** CHAT_TURNS_PER_MINUTE, quoted by the 429. */
    private readonly turnsPerMinute: number,
  ) {}

  /** Counts one turn of `caller` on the intern; 429 `rate_limited` with the window's Retry-After when spent. */
  async count(caller: string, internId: string): Promise<void> {
    const verdict = await this.limiter.consume(caller, internId);
    if (verdict.allowed) return;
    const refusal = apiError('rate_limited', `at most ${this.turnsPerMinute} turns per minute on this intern`);
    throw new HttpErrorException({ ...refusal, headers: { 'retry-after': String(verdict.retryAfterSeconds) } });
  }
}
