import type { ParsedAnswer } from '@interns/contracts';
import { openQuestionsGauge } from './runs.metrics';

/**
 * The question a run waits on (one at a time): settled by the caller's answer, given up (null) when the run
 * stops, or expired when its deadline passes unanswered.
 */
export class PendingQuestion {
  private waiting: { toolCallId: string; resolve: (answer: ParsedAnswer | null) => void; timer: NodeJS.Timeout } | null = null;

  /** The tool call id of the question waited on, null when none is. */
  get toolCallId(): string | null {
    return this.waiting?.toolCallId ?? null;
  }

  /** Waits for the answer; `onExpire` runs if none came within `deadlineMs` (and must give the question up). */
  wait(toolCallId: string, deadlineMs: number, onExpire: () => void): Promise<ParsedAnswer | null> {
    openQuestionsGauge.inc();
    return new Promise<ParsedAnswer | null>((resolve) => {
      const timer = setTimeout(() => {
        if (this.waiting?.toolCallId === toolCallId) onExpire();
      }, deadlineMs);
      timer.unref();
      this.waiting = { toolCallId, resolve, timer };
    }).finally(() => openQuestionsGauge.dec());
  }

  /** The caller answered `toolCallId`; nothing happens when that is no longer the question waited on. */
  settle(toolCallId: string, answer: ParsedAnswer): void {
    if (this.waiting?.toolCallId === toolCallId) this.release(answer);
  }

  /** The run stopped: whatever waits gets null. */
  giveUp(): void {
    this.release(null);
  }

  private release(answer: ParsedAnswer | null): void {
    const waiting = this.waiting;
    if (waiting === null) return;
    clearTimeout(waiting.timer);
    this.waiting = null;
    waiting.resolve(answer);
  }
}
