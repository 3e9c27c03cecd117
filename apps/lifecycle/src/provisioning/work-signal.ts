/**
 * "There may be new work": the use cases of this replica raise it right after they append, so the process
 * manager starts at once instead of at its next poll.
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
