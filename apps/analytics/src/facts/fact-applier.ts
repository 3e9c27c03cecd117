import type { EntityManager } from 'typeorm';
import type { IntegrationEventType } from '@interns/contracts';
import type { EventData, ReceivedEvent } from './integration-event';

/**
 * The shape of a facts applier, apart from facts-applier.ts, which gathers the appliers: each applier file imports
 * this, not the file that imports it.
 */

/** Writes the facts of one integration event type, inside the applying transaction. */
export type FactApplier = (manager: EntityManager, event: ReceivedEvent, data: EventData) => Promise<void>;
export type FactsApplierOf<T extends IntegrationEventType> = Record<T, FactApplier>;
