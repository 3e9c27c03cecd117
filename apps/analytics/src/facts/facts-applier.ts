import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource, EntityManager } from 'typeorm';
import { isTransactionRace } from '@interns/database';
import { INTEGRATION_EVENT_TYPES, type IntegrationEventType, isIntegrationEventType } from '@interns/contracts';
import { EventData, MalformedEventError, type ReceivedEvent } from './integration-event';
import { INTERN_FACTS_APPLIERS } from './intern-facts.applier';
import type { FactApplier, FactsApplierOf } from './fact-applier';
import { RUN_FACTS_APPLIERS } from './run-facts.applier';

/** `ignored`: a type analytics keeps no facts of (questions), or one it does not know. */
export type ApplyOutcome = 'applied' | 'duplicate' | 'ignored';


const APPLIERS: Partial<FactsApplierOf<IntegrationEventType>> = { ...INTERN_FACTS_APPLIERS, ...RUN_FACTS_APPLIERS };

const DEFAULT_MAX_ATTEMPTS = 8;

/**
 * Applies an integration event to the facts tables exactly once: the event id goes into
 * `analytics.processed_events` in the same transaction as the facts, so a redelivered event (JetStream is
 * at least once; an ack can be lost after the commit) finds its id and changes nothing.
 *
 * Transactions are SERIALIZABLE: replicas apply events concurrently, and a run's row joins facts of its intern.
 * Serializable isolation makes "whichever side arrives second fills the join" hold under any interleaving;
 * a transaction that loses a race is retried.
 */
export class FactsApplier {
  private readonly maxAttempts: number;

  constructor(
    private readonly dataSource: DataSource,
    options: { maxAttempts?: number } = {},
  ) {
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  }

  async apply(event: ReceivedEvent): Promise<ApplyOutcome> {
    const applier = isIntegrationEventType(event.type) ? APPLIERS[event.type] : undefined;
    if (applier === undefined) return 'ignored';
    const readable = INTEGRATION_EVENT_TYPES[event.type as IntegrationEventType].version;
    // A newer shape than this build reads: kept (naked) for a replica that knows it.
    if (event.version > readable) {
      throw new MalformedEventError(`${event.type} ${event.id}: version ${event.version}, this replica reads ${readable}`);
    }
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.dataSource.transaction('SERIALIZABLE', (manager) => this.applyOnce(manager, event, applier));
      } catch (error) {
        if (!isTransactionRace(error) || attempt >= this.maxAttempts) throw error;
        await sleep(Math.random() * 10 * attempt);
      }
    }
  }

  private async applyOnce(manager: EntityManager, event: ReceivedEvent, applier: FactApplier): Promise<ApplyOutcome> {
    const inserted: unknown[] = await manager.query(
      'INSERT INTO analytics.processed_events (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING RETURNING event_id',
      [event.id],
    );
    if (inserted.length === 0) return 'duplicate';
    await applier(manager, event, EventData.of(event));
    return 'applied';
  }
}
