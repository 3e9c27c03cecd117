export interface PerKeyBackoffOptions {
  /** Wait after a key's first failure, doubled for each further consecutive one. */
  firstMs: number;
  maxMs: number;
}

/**
 * When each key (e.g. an intern) may be worked on next: after consecutive failures, a wait doubling from
 * `firstMs` up to `maxMs`; after a success, at once or after the wait the work asked for. One slow or failing key
 * never holds the others back, unlike WorkerLoop's backoff, which pauses the whole loop. Times are epoch ms,
 * passed in so the schedule is plain arithmetic.
 */
export class PerKeyBackoff {
  private readonly notBefore = new Map<string, number>();
  private readonly failures = new Map<string, number>();

  constructor(private readonly options: PerKeyBackoffOptions) {}

  /** False while `key` waits after a failure or a requested deferral. */
  isReady(key: string, now: number): boolean {
    return (this.notBefore.get(key) ?? 0) <= now;
  }

  /** The work on `key` succeeded: its failures are forgotten; it is ready at once, or `againAfterMs` from `now`. */
  succeeded(key: string, now: number, againAfterMs: number | null = null): void {
    this.failures.delete(key);
    if (againAfterMs === null) this.notBefore.delete(key);
    else this.notBefore.set(key, now + againAfterMs);
  }

  /** The work on `key` failed once more: returns the wait before it is ready again. */
  failed(key: string, now: number): number {
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const wait = Math.min(this.options.firstMs * 2 ** (failures - 1), this.options.maxMs);
    this.notBefore.set(key, now + wait);
    return wait;
  }

  /** Drops what is remembered of keys that have no work left. */
  forgetAllBut(keys: ReadonlySet<string>): void {
    for (const key of this.notBefore.keys()) if (!keys.has(key)) this.notBefore.delete(key);
    for (const key of this.failures.keys()) if (!keys.has(key)) this.failures.delete(key);
  }
}
