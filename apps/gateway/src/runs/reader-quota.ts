import { DomainError } from '@interns/contracts';

/**
 * How many streams each caller holds open on this gateway: run streams (RUN_STREAM_READERS_PER_CALLER), workspace
 * event streams (EVENT_STREAMS_PER_CALLER, a quota of its own). Each run stream holds a
 * connection and a JetStream consumer for as long as the run goes, so one caller cannot hold them all. Per
 * gateway process, like the connections themselves; a caller spread over N replicas may hold N times as many.
 */
export class ReaderQuota {
  private readonly held = new Map<string, number>();

  /** @param what the streams counted, as the 429's message names them */
  constructor(
    private readonly perCaller: number,
    private readonly what = 'run streams',
  ) {}

  /** Takes one of the caller's readers (429 `rate_limited` when it holds them all); the returned function gives it back. */
  take(caller: string): () => void {
    const holding = this.held.get(caller) ?? 0;
    if (holding >= this.perCaller) {
      throw new DomainError('rate_limited', `at most ${this.perCaller} ${this.what} may be open at once; close one and try again`);
    }
    this.held.set(caller, holding + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.held.get(caller) ?? 1) - 1;
      if (left === 0) this.held.delete(caller);
      else this.held.set(caller, left);
    };
  }
}
