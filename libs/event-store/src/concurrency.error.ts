/** The stream moved on since the command handler loaded it: reload, decide again, append again. */
export class ConcurrencyError extends Error {
  override readonly name = 'ConcurrencyError';

  constructor(
    readonly streamId: string,
    readonly expectedVersion: number,
    readonly actualVersion: number,
  ) {
    super(`stream "${streamId}" is at version ${actualVersion}, expected ${expectedVersion}`);
  }
}

export interface RetryOnConcurrencyOptions {
  /** Total attempts including the first; defaults to 5. */
  attempts?: number;
  /** Called on every conflict that will be retried (metrics, logs). */
  onConflict?: (error: ConcurrencyError, attempt: number) => void;
}

/**
 * Runs `fn` (which must reload the stream itself) again after a ConcurrencyError, a bounded number of times.
 * Any other error, and the conflict of the last attempt, propagate unchanged.
 */
export async function retryOnConcurrency<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOnConcurrencyOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 5;
  if (!Number.isInteger(attempts) || attempts < 1) throw new Error(`attempts must be a positive integer, got ${attempts}`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (!(error instanceof ConcurrencyError) || attempt >= attempts) throw error;
      options.onConflict?.(error, attempt);
    }
  }
}
