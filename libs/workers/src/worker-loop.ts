import type { QueryRunner } from 'typeorm';
import type { LeaderLease } from './leader-lease';
import type { WorkSignal } from './work-signal';

/** Compatible with Nest's `Logger` and with `console`. */
export interface WorkerLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * `more`: there is work left, go again at once; `idle`: wait for the poll interval (or a wake); `quiet`: nothing is
 * pending or under way at all: wait for the quiet poll interval (or a wake); `held`: there is work, but it waits on
 * something else finishing first (an older transaction): look again soon, after HELD_FIRST_RETRY_MS, doubling while
 * it stays held, never later than the poll interval.
 */
export type RoundOutcome = 'idle' | 'quiet' | 'more' | 'held';

/** The first look again after a `held` round. */
export const HELD_FIRST_RETRY_MS = 10;

/**
 * One round of work, with or without a lease. With one, it runs only on the replica holding it and gets the
 * lease's connection; without, every replica runs it. Throwing backs the loop off (giving leadership up first).
 */
export type WorkerRound =
  | { lease: LeaderLease; round: (leader: QueryRunner) => Promise<RoundOutcome> }
  | { lease?: undefined; round: () => Promise<RoundOutcome> };

export type WorkerLoopOptions = WorkerRound & {
  /** Names the worker in its log lines and its description, e.g. `outbox relay integration-events`. */
  name: string;
  pollIntervalMs: number;
  /**
   * The wait after a `quiet` round; default the poll interval. Longer: a worker with nothing to do polls less often
   * (its own replica's news still wakes it at once through `signal`).
   */
  quietPollIntervalMs?: number;
  /** Wait after the first failed round, doubled for each further one; default twice the poll interval. */
  firstBackoffMs?: number;
  maxBackoffMs?: number;
  /** Cuts the wait short when this replica knows there is new work. */
  signal?: WorkSignal;
  logger?: WorkerLogger;
  /** Just took the lease: forget what an earlier term remembered (another replica may have moved on). */
  onLeading?: () => void;
  /** A round failed: forget what may be stale before the next attempt. */
  onFailure?: (error: unknown) => void;
  /** After the last round, before the lease is given up: let work in flight settle. */
  onStopped?: () => Promise<void>;
};

/** A worker's state for logs and health checks. */
export interface WorkerDescription {
  name: string;
  running: boolean;
  /** Null for workers without a lease. */
  leader: boolean | null;
  consecutiveFailures: number;
  lastError: string | null;
}

const DEFAULT_MAX_BACKOFF_MS = 5_000;

/**
 * The loop every background worker of the platform runs (the outbox relays, the provisioning process manager,
 * the analytics consumers): take the lease when there is one, run a round, sleep the poll interval unless
 * told of new work, back off exponentially after failures (logging each), and end only through `stop()`,
 * which lets the round in flight finish, then gives the lease up.
 */
export class WorkerLoop {
  private readonly logger: WorkerLogger;
  private readonly firstBackoffMs: number;
  private readonly maxBackoffMs: number;
  private loop: Promise<void> | null = null;
  private stopping = false;
  /** A wake that came while a round ran: the next sleep is skipped, so the news is not lost. */
  private woken = false;
  private cutSleep: (() => void) | null = null;
  private unsubscribe: (() => void) | null = null;
  private failures = 0;
  private lastError: string | null = null;
  /** `held` rounds in a row. */
  private heldRounds = 0;

  constructor(private readonly options: WorkerLoopOptions) {
    this.logger = options.logger ?? console;
    this.firstBackoffMs = options.firstBackoffMs ?? options.pollIntervalMs * 2;
    this.maxBackoffMs = options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
  }

  /** Starts the loop in the background; a second call while it runs does nothing. */
  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.unsubscribe = this.options.signal?.subscribe(() => this.wake()) ?? null;
    this.loop = this.run();
  }

  /** Lets the round in flight finish, runs `onStopped`, gives the lease up; resolves when all of that is done. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.wake();
    await this.loop;
    this.loop = null;
  }

  /** True from `stop()` on: long rounds check it to end early. */
  get isStopping(): boolean {
    return this.stopping;
  }

  get isLeader(): boolean {
    return this.options.lease?.isLeader ?? false;
  }

  /** A long round got going (e.g. a subscription opened): a failure after this backs off from the start again. */
  markProgress(): void {
    this.failures = 0;
  }

  /** Ends the current sleep now, or skips the next one. */
  wake(): void {
    this.woken = true;
    this.cutSleep?.();
  }

  describe(): WorkerDescription {
    return {
      name: this.options.name,
      running: this.loop !== null && !this.stopping,
      leader: this.options.lease ? this.options.lease.isLeader : null,
      consecutiveFailures: this.failures,
      lastError: this.lastError,
    };
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      let outcome: RoundOutcome;
      try {
        outcome = await this.runRound();
        this.failures = 0;
      } catch (error) {
        await this.backOff(error);
        continue;
      }
      this.heldRounds = outcome === 'held' ? this.heldRounds + 1 : 0;
      if (outcome === 'idle') await this.sleep(this.options.pollIntervalMs);
      if (outcome === 'quiet') await this.sleep(this.options.quietPollIntervalMs ?? this.options.pollIntervalMs);
      if (outcome === 'held') await this.sleep(Math.min(HELD_FIRST_RETRY_MS * 2 ** (this.heldRounds - 1), this.options.pollIntervalMs));
    }
    await this.options.onStopped?.();
    await this.resign();
  }

  private async runRound(): Promise<RoundOutcome> {
    const options = this.options;
    if (options.lease === undefined) return options.round();
    const wasLeader = options.lease.isLeader;
    const leader = await options.lease.acquire();
    if (!leader) return 'idle';
    if (!wasLeader) {
      options.onLeading?.();
      this.logger.log(`${options.name}: took the lease, working (leader)`);
    }
    return options.round(leader);
  }

  private async backOff(error: unknown): Promise<void> {
    this.failures += 1;
    this.lastError = describeError(error);
    const delay = Math.min(this.firstBackoffMs * 2 ** (this.failures - 1), this.maxBackoffMs);
    const resigning = this.options.lease?.isLeader ? 'resigning, ' : '';
    this.logger.warn(`${this.options.name}: ${this.lastError}; ${resigning}retrying in ${delay} ms`);
    this.options.onFailure?.(error);
    await this.resign();
    await this.sleep(delay);
  }

  private async resign(): Promise<void> {
    // A lease that cannot be given up cleanly ends its session (see LeaderLease): nothing left to do here.
    await this.options.lease?.resign().catch(() => undefined);
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.cutSleep = null;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.cutSleep = done;
    });
  }
}

/** `Name: message` of an error, or the thrown value as text. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
