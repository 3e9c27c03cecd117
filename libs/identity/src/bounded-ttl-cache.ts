interface Entry<V> {
  value: V;
  expiresAt: number;
}

/**
 * A small LRU map whose entries also expire. Bounded so a flood of random credentials cannot grow
 * the gateway's memory; the TTL bounds how long a revoked credential keeps working.
 */
export class BoundedTtlCache<V> {
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The live value, or undefined when absent or expired. */
  get(key: string): { value: V } | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= this.now()) return undefined;
    // Re-inserting moves the entry to the young end of the Map's insertion order.
    this.entries.set(key, entry);
    return { value: entry.value };
  }

  set(key: string, value: V, expiresAt: number): void {
    if (expiresAt <= this.now() || this.maxEntries <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}
