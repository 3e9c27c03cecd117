import { Inject, Injectable } from '@nestjs/common';
import type { PlatformConfig } from '@interns/contracts';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { apiError } from '../http-error.reply';
import { CHAT_DEPENDENCIES } from './chat.tokens';
import type { ChatDependencies } from './chat.tokens';
import { HttpErrorException } from './http-error.exception';

/** The chat turn limiter as the routes use it (chat prompts, invoke, signing): one budget, one 429. */
@Injectable()
export class ChatTurnCounter {
  constructor(
    @Inject(CHAT_DEPENDENCIES) private readonly chat: ChatDependencies,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {}

  /** Counts one turn of `caller` on the intern; 429 `rate_limited` with the window's Retry-After when spent. */
  async count(caller: string, internId: string): Promise<void> {
    const verdict = await this.chat.limiter.consume(caller, internId);
    if (verdict.allowed) return;
    const refusal = apiError('rate_limited', `at most ${this.config.chatTurnsPerMinute} turns per minute on this intern`);
    throw new HttpErrorException({ ...refusal, headers: { 'retry-after': String(verdict.retryAfterSeconds) } });
  }
}
