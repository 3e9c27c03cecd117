/**
 * "There may be new work": raised by code of this replica right after it created some (lifecycle's use cases
 * after an append), so a WorkerLoop subscribed to it goes at once instead of at its next poll.
 */
export class WorkSignal {
  private readonly listeners = new Set<() => void>();

  notify(): void {
    for (const listener of this.listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
