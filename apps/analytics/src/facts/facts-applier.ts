import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource, EntityManager } from 'typeorm';
import type { EventSource, IntegrationEvent } from '../integration-events/integration-event';
import { applyLifecycleEvent } from './intern-facts.applier';
import { applyRunsEvent } from './run-facts.applier';

export type ApplyOutcome = 'applied' | 'duplicate';

const APPLIERS: Record<EventSource, (manager: EntityManager, event: IntegrationEvent) => Promise<void>> = {
  lifecycle: applyLifecycleEvent,
  runs: applyRunsEvent,
};

/** serialization_failure, deadlock_detected: the transaction lost a race and may simply run again. */
const RETRYABLE_CODES = new Set(['40001', '40P01']);
const DEFAULT_MAX_ATTEMPTS = 8;

function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE_CODES.has(code);
}

/**
 * Applies an integration event to the facts tables exactly once: the event id goes into
 * `analytics.processed_events` in the same transaction as the facts, so a redelivered event (JetStream is
 * at least once; an ack can be lost after the commit) finds its id and changes nothing.
 *
 * Transactions are SERIALIZABLE: replicas apply events of different streams concurrently, and a run's row
 * joins facts from three streams (its session, its intern). Serializable isolation makes "whichever side
 * arrives second fills the join" hold under any interleaving; a transaction that loses a race is retried.
 */
export class FactsApplier {
  private readonly maxAttempts: number;

  constructor(
    private readonly dataSource: DataSource,
    options: { maxAttempts?: number } = {},
  ) {
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  }

  async apply(source: EventSource, event: IntegrationEvent): Promise<ApplyOutcome> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.dataSource.transaction('SERIALIZABLE', (manager) => this.applyOnce(manager, source, event));
      } catch (error) {
        if (!isRetryable(error) || attempt >= this.maxAttempts) throw error;
        await sleep(Math.random() * 10 * attempt);
      }
    }
  }

  private async applyOnce(manager: EntityManager, source: EventSource, event: IntegrationEvent): Promise<ApplyOutcome> {
    const inserted: unknown[] = await manager.query(
      'INSERT INTO analytics.processed_events (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING RETURNING event_id',
      [event.event_id],
    );
    if (inserted.length === 0) return 'duplicate';
    await APPLIERS[source](manager, event);
    return 'applied';
  }
}
