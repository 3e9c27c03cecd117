import type { RuntimeDriverClient } from './runtime-driver.client';

/** A stop the runtime driver refused (not a transient failure): the worker loop backs off and tries again. */
export class StopRefused extends Error {
  override readonly name = 'StopRefused';
}

export type RuntimeStopOutcome = { kind: 'stopped' } | { kind: 'given_up'; attempt: number; message: string };

/**
 * Stops a suspended or failed intern's booted runtime: ends its runs, then stops it. A refusal throws
 * StopRefused (retried with the loop's backoff) up to `attempts` times per intern, then gives up: a driver
 * that keeps refusing must not be asked forever. Transient errors (no answer) propagate as they are and are
 * not counted, as for every other step. The count is this process's: a restart starts it again.
 */
export class RuntimeStopRunner {
  private readonly refusals = new Map<string, number>();

  constructor(
    private readonly driver: RuntimeDriverClient,
    private readonly attempts: number,
  ) {}

  async run(internId: string, correlationId: string): Promise<RuntimeStopOutcome> {
    const refusal = await this.tryStop(internId, correlationId);
    if (refusal === null) {
      this.refusals.delete(internId);
      return { kind: 'stopped' };
    }
    const attempt = (this.refusals.get(internId) ?? 0) + 1;
    if (attempt < this.attempts) {
      this.refusals.set(internId, attempt);
      throw new StopRefused(`${refusal} (attempt ${attempt} of ${this.attempts})`);
    }
    this.refusals.delete(internId);
    return { kind: 'given_up', attempt, message: refusal };
  }

  /** Drops the counts of interns that have no work left. */
  forgetAllBut(pending: Set<string>): void {
    for (const id of this.refusals.keys()) if (!pending.has(id)) this.refusals.delete(id);
  }

  /** Null when the runs ended and the runtime stopped, else the driver's refusal. */
  private async tryStop(internId: string, correlationId: string): Promise<string | null> {
    const request = { internId, correlationId };
    const ended = await this.driver.endRuns({ ...request, reason: 'intern_suspended' });
    if (!ended.ok) return `ending runs refused: ${ended.message}`;
    const stopped = await this.driver.stop(request);
    if (!stopped.ok) return `stopping the runtime refused: ${stopped.message}`;
    return null;
  }
}
