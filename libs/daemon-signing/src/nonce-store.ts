/**
 * Where a daemon remembers the v2 nonces it accepted. `claim` must be atomic across everything that shares
 * the store: with Redis it is `SET <nonce> 1 NX EXAT <expiresAtSeconds>` (true when the SET happened).
 */
export interface NonceStore {
  /** Marks the nonce used until `expiresAtSeconds` (unix); false when it was already used. */
  claim(nonce: string, expiresAtSeconds: number): Promise<boolean>;
}

export interface InMemoryNonceStoreOptions {
  /** Unix seconds; tests pass a fake clock. */
  nowSeconds?: () => number;
}

/**
 * A single-process NonceStore. Entries are dropped once expired (swept at most once a second, on use), so it
 * holds at most the nonces of the last timestamp window. The verifier claims a nonce only after the signature
 * checked out, so only validly signed requests can make it grow.
 */
export class InMemoryNonceStore implements NonceStore {
  private readonly used = new Map<string, number>();
  private readonly now: () => number;
  private lastSweep = 0;

  constructor(options: InMemoryNonceStoreOptions = {}) {
    this.now = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  }

  async claim(nonce: string, expiresAtSeconds: number): Promise<boolean> {
    const now = this.now();
    this.sweep(now);
    const expiry = this.used.get(nonce);
    if (expiry !== undefined && expiry >= now) return false;
    this.used.set(nonce, expiresAtSeconds);
    return true;
  }

  /** How many nonces are remembered (for tests and metrics). */
  get size(): number {
    return this.used.size;
  }

  private sweep(now: number): void {
    if (now === this.lastSweep) return;
    this.lastSweep = now;
    for (const [nonce, expiry] of this.used) if (expiry < now) this.used.delete(nonce);
  }
}
