/**
 * A map whose entries live `ttlMs` and of which at most `maxEntries` are kept (the oldest go first): the door's
 * caches, which must neither answer stale for long nor grow with whatever names and tokens clients send.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The value, or undefined when absent or expired. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    if (this.ttlMs <= 0) return;
    this.entries.delete(key);
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expiresAt: this.now() + this.ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Drops every entry whose value `matches` (a walk over at most `maxEntries`; for rare events only). */
  deleteWhere(matches: (value: V, key: K) => boolean): void {
    for (const [key, entry] of this.entries) if (matches(entry.value, key)) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
