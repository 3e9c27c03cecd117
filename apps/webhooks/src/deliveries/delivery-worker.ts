import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { describeError, type RoundOutcome, WorkerLoop, type WorkerLogger, type WorkSignal } from '@interns/workers';
import type { AttemptResult, DeliverySender } from './delivery-sender';
import type { ClaimedDelivery, DeliveryStore } from './delivery-store';
import { deliveryMetrics } from './delivery.metrics';

export interface DeliveryWorkerOptions {
  store: DeliveryStore;
  sender: Pick<DeliverySender, 'send'>;
  /** Attempts this replica makes at once. */
  concurrency: number;
  /** Raised when deliveries were recorded, so they go out at once rather than at the next poll. */
  signal?: WorkSignal;
  /** Longest sleep between looks at the table (new deliveries of other replicas, lapsed claims). */
  pollIntervalMs?: number;
  logger?: WorkerLogger;
}

/**
 * Delivers the deliveries table, on every replica (no lease: the claim's `SKIP LOCKED` shares the rows).
 * A round claims as many due deliveries as there are free slots and starts their attempts without waiting for
 * them; a finished attempt, a new delivery (the signal) or the next due time (a timer set from the table)
 * wakes the loop. `stop()` lets the attempts in flight finish and record their results; an attempt cut off by
 * a crash is retried by whichever replica sees its claim lapse.
 */
export class DeliveryWorker implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly loop: WorkerLoop;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly pollIntervalMs: number;
  private readonly logger: WorkerLogger;
  private dueTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.logger = options.logger ?? console;
    this.loop = new WorkerLoop({
      name: 'webhook delivery worker',
      round: () => this.round(),
      pollIntervalMs: this.pollIntervalMs,
      signal: options.signal,
      logger: this.logger,
      onStopped: () => this.settle(),
    });
  }

  onApplicationBootstrap(): void {
    deliveryMetrics.watchPendingAge(() => this.options.store.oldestPendingAgeSeconds());
    this.loop.start();
  }

  /** Stops claiming, then waits for the attempts in flight (each bounded by WEBHOOK_TIMEOUT_MS) to record their results. */
  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
    this.clearDueTimer();
    deliveryMetrics.unwatchPendingAge();
  }

  private async round(): Promise<RoundOutcome> {
    const free = this.options.concurrency - this.inFlight.size;
    // Every slot busy: the attempt that finishes first wakes the loop.
    if (free < 1) return 'idle';
    const claimed = await this.options.store.claimDue(free);
    for (const delivery of claimed) this.track(this.attempt(delivery));
    if (claimed.length === free) return 'more';
    await this.wakeWhenDue();
    return 'idle';
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    // Not sent unsigned: a failed attempt, retried on the schedule (another replica, or this one once its key is
    // configured, may open the secret).
    const result: AttemptResult =
      delivery.secret === null
        ? { outcome: 'secret_unavailable', statusCode: null, error: delivery.secretError ?? 'the signing secret cannot be opened' }
        : await this.options.sender.send({ ...delivery, secret: delivery.secret });
    try {
      const fate = await this.options.store.record(delivery, result);
      deliveryMetrics.attempted(result, fate);
      if (result.outcome !== 'delivered') {
        const next = fate === 'retry' ? 'will retry' : fate;
        this.logger.warn(`webhook delivery ${delivery.eventId} to endpoint ${delivery.endpointId}, attempt ${delivery.attempt}: ${result.error} (${next})`);
      }
    } catch (error) {
      // The claim lapses and another attempt is made: at least once, never lost.
      this.logger.warn(`webhook delivery ${delivery.eventId}: result of attempt ${delivery.attempt} not recorded: ${describeError(error)}`);
    }
  }

  private track(attempt: Promise<void>): void {
    this.inFlight.add(attempt);
    void attempt.finally(() => {
      this.inFlight.delete(attempt);
      // A slot is free: take the next due delivery.
      this.loop.wake();
    });
  }

  /** Sleeps no longer than until the next delivery is due (the loop's poll interval bounds it anyway). */
  private async wakeWhenDue(): Promise<void> {
    const ms = await this.options.store.msUntilNextDue();
    this.clearDueTimer();
    if (ms === null || ms >= this.pollIntervalMs) return;
    this.dueTimer = setTimeout(() => this.loop.wake(), ms);
    this.dueTimer.unref();
  }

  private clearDueTimer(): void {
    if (this.dueTimer !== null) clearTimeout(this.dueTimer);
    this.dueTimer = null;
  }

  private async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
