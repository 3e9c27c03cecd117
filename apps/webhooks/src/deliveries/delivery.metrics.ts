import { counter, gauge } from '@interns/service-runtime';
import type { AttemptResult } from './delivery-sender';
import type { DeliveryFate } from './delivery-store';

/** A scrape must not hang on a database that does not answer. */
const MEASURE_TIMEOUT_MS = 2_000;

const deliveriesTotal = counter<'outcome'>({
  name: 'interns_webhook_deliveries_total',
  help: 'Webhook deliveries that ended, by outcome: delivered (a 2xx) or failed (no 2xx after the whole retry schedule)',
  labelNames: ['outcome'],
});

const attemptsTotal = counter<'result'>({
  name: 'interns_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts, by result: delivered, http_error, timeout, network_error, refused_address',
  labelNames: ['result'],
});

let pendingAgeSource: (() => Promise<number>) | null = null;

const oldestPending = gauge({
  name: 'interns_webhook_oldest_pending_delivery_seconds',
  help: 'Age of the oldest webhook delivery still pending (0 when none), measured at scrape',
  async collect() {
    await measure(this);
  },
});

async function measure(target: typeof oldestPending): Promise<void> {
  if (pendingAgeSource === null) return;
  let timer: NodeJS.Timeout | undefined;
  try {
    const seconds = await Promise.race([
      pendingAgeSource(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('measurement timed out')), MEASURE_TIMEOUT_MS);
      }),
    ]);
    target.set(seconds);
  } catch {
    // Unknown is shown as NaN rather than as a stale number; the database's health check says why.
    target.set(Number.NaN);
  } finally {
    clearTimeout(timer);
  }
}

/** The delivery worker's metrics (one worker per process). */
export const deliveryMetrics = {
  /** From the worker's start to its stop, the oldest pending delivery's age is measured at every scrape. */
  watchPendingAge(source: () => Promise<number>): void {
    pendingAgeSource = source;
  },
  unwatchPendingAge(): void {
    pendingAgeSource = null;
    oldestPending.reset();
  },
  attempted(result: AttemptResult, fate: DeliveryFate): void {
    attemptsTotal.inc({ result: result.outcome });
    if (fate === 'delivered' || fate === 'failed') deliveriesTotal.inc({ outcome: fate });
  },
};
