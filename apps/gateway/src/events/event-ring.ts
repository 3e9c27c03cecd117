import type { EventAudience } from './event-audience';

/** One event of the feed as every reader sends it: its audience, and its SSE frame made once. */
export interface FeedEntry {
  /** This gateway's running number of the entry: readers hold their place by it. */
  position: number;
  id: string;
  /** When the workspace event stream stored it (ms): its age counts from there. */
  storedAt: number;
  audience: EventAudience;
  frame: Buffer;
}

/**
 * The events of the last EVENTS_REPLAY_RETENTION_MS (at most `maxBytes` of frames) in the feed's order, shared by
 * every reader on this gateway: a reader is a position in it, so a slow one costs no memory of its own, and a
 * resume (`Last-Event-ID`) is a lookup. The oldest entries go first, by age or by size.
 */
export class EventRing {
  private entries: FeedEntry[] = [];
  /** `entries[head]` is the oldest (no O(n) shift per eviction). */
  private head = 0;
  private firstPosition = 0;
  private bytes = 0;
  private readonly positions = new Map<string, number>();

  constructor(private readonly maxBytes: number) {}

  /** The position of the oldest entry still held (== `next` when empty). */
  get first(): number {
    return this.firstPosition;
  }

  /** The position the next entry will take. */
  get next(): number {
    return this.firstPosition + this.entries.length - this.head;
  }

  get heldBytes(): number {
    return this.bytes;
  }

  has(id: string): boolean {
    return this.positions.has(id);
  }

  at(position: number): FeedEntry | undefined {
    if (position < this.firstPosition) return undefined;
    return this.entries[this.head + position - this.firstPosition];
  }

  /** The entry `id`, while it is held. */
  find(id: string): FeedEntry | undefined {
    const position = this.positions.get(id);
    return position === undefined ? undefined : this.at(position);
  }

  /** Appends an event (its position is `next`); the oldest go while the frames are over `maxBytes`. */
  push(entry: Omit<FeedEntry, 'position'>): FeedEntry {
    const held: FeedEntry = { ...entry, position: this.next };
    this.entries.push(held);
    this.positions.set(held.id, held.position);
    this.bytes += held.frame.length;
    while (this.bytes > this.maxBytes && this.head < this.entries.length - 1) this.dropOldest();
    return held;
  }

  /** Drops the entries stored before `cutoff` (ms); answers whether any went. */
  dropStoredBefore(cutoff: number): boolean {
    const before = this.firstPosition;
    while (this.head < this.entries.length && this.entries[this.head].storedAt < cutoff) this.dropOldest();
    return this.firstPosition !== before;
  }

  private dropOldest(): void {
    const oldest = this.entries[this.head];
    this.positions.delete(oldest.id);
    this.bytes -= oldest.frame.length;
    this.head += 1;
    this.firstPosition += 1;
    // Compact now and then: the array does not grow without end, and copying is amortized over many drops.
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }
}
