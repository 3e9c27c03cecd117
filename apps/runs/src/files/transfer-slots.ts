import { DomainError } from '@interns/contracts';

/**
 * The downloads and uploads this replica serves at once, NATS or direct (FILE_TRANSFERS_PER_REPLICA): each holds a
 * sandbox process and a few MiB of buffers, so past the cap a new one is refused (409 `limit_reached`, as the
 * per-intern terminal cap) rather than let memory and processes grow with the callers.
 */
export class TransferSlots {
  private inUse = 0;

  constructor(private readonly limit: number) {}

  /** A slot, or the refusal; the release it answers may be called more than once. */
  take(): () => void {
    if (this.inUse >= this.limit) {
      throw new DomainError('limit_reached', `this runs replica moves ${this.limit} files at once, at most; try again shortly`);
    }
    this.inUse++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.inUse--;
    };
  }

  get used(): number {
    return this.inUse;
  }
}
