import { ConcurrencyError, retryOnConcurrency } from './concurrency.error';

describe('retryOnConcurrency', () => {
  it('retries after a conflict and returns the first success', async () => {
    const conflicts: number[] = [];
    const result = await retryOnConcurrency(
      async (attempt) => {
        if (attempt < 3) throw new ConcurrencyError('s-1', attempt - 1, attempt);
        return 'done';
      },
      { attempts: 5, onConflict: (_error, attempt) => conflicts.push(attempt) },
    );
    expect(result).toBe('done');
    expect(conflicts).toEqual([1, 2]);
  });

  it('rethrows the conflict of the last attempt', async () => {
    let calls = 0;
    const run = retryOnConcurrency(
      async () => {
        calls += 1;
        throw new ConcurrencyError('s-1', 0, calls);
      },
      { attempts: 3 },
    );
    await expect(run).rejects.toBeInstanceOf(ConcurrencyError);
    await expect(run).rejects.toMatchObject({ streamId: 's-1', expectedVersion: 0, actualVersion: 3 });
    expect(calls).toBe(3);
  });

  it('does not retry other errors', async () => {
    let calls = 0;
    const boom = new Error('boom');
    await expect(
      retryOnConcurrency(async () => {
        calls += 1;
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(calls).toBe(1);
  });

  it('defaults to 5 attempts', async () => {
    let calls = 0;
    await expect(
      retryOnConcurrency(async () => {
        calls += 1;
        throw new ConcurrencyError('s-1', 0, 1);
      }),
    ).rejects.toBeInstanceOf(ConcurrencyError);
    expect(calls).toBe(5);
  });
});
