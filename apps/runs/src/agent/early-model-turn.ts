import type { ModelProvider, ModelStreamEvent, ModelTurnRequest } from './model-provider';

/**
 * A run's first model turn, asked for while the run's start is still being recorded (issue 29): the model's time
 * to its first token overlaps the start statement instead of following it. What the model streams waits here
 * until the agent loop reads it, in order, then the loop reads on as the model goes.
 *
 * Nothing the model sends reaches anyone before the start is recorded: the loop only reads this turn once the run
 * exists. A start that is refused gives the turn up (`abandon`), which aborts the provider's request; once the run
 * exists, its own stop does the same (`follow`). A failure of the turn is kept for the loop to meet where it reads
 * it, never thrown on its own.
 */
export class EarlyModelTurn {
  /** When the turn was asked for (ISO 8601), the time its `ModelRequested` event records. */
  readonly requestedAt = new Date().toISOString();
  private readonly controller = new AbortController();
  private readonly events: ModelStreamEvent[] = [];
  private ended = false;
  private failure: { error: unknown } | null = null;
  private wake: (() => void) | null = null;

  constructor(provider: ModelProvider, request: Omit<ModelTurnRequest, 'signal'>) {
    void this.pump(() => provider.streamTurn({ ...request, signal: this.controller.signal }));
  }

  /** The start was refused: the provider's request is aborted and nothing of the turn is read. */
  abandon(reason: unknown): void {
    this.controller.abort(reason);
  }

  /** The run's stop (its abort signal) aborts the turn too, as it does every later turn of the run. */
  follow(signal: AbortSignal): void {
    if (signal.aborted) this.controller.abort(signal.reason);
    else signal.addEventListener('abort', () => this.controller.abort(signal.reason), { once: true });
  }

  /**
   * The turn's events from the first, as a provider's `streamTurn` would give them, each let go once read; its
   * failure, thrown here. Read once (the loop's first turn).
   */
  async *stream(): AsyncIterable<ModelStreamEvent> {
    for (;;) {
      const waiting = this.events.splice(0);
      for (const event of waiting) yield event;
      if (waiting.length > 0) continue;
      if (this.failure !== null) throw this.failure.error;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private async pump(open: () => AsyncIterable<ModelStreamEvent>): Promise<void> {
    try {
      for await (const event of open()) {
        this.events.push(event);
        this.notify();
      }
    } catch (error) {
      this.failure = { error };
    } finally {
      this.ended = true;
      this.notify();
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
