import type { EntityManager } from 'typeorm';
import type { StoredEvent } from '@interns/event-store';
import { INTERN_STREAM_TYPE, internStreamId } from '@interns/lifecycle-domain';
import { revokeDaemonTokens } from './daemon-tokens';

/** The intern events after which its runtime is no longer reachable: its daemon tokens die with them. */
const REVOKING_EVENTS: ReadonlySet<string> = new Set(['InternSuspended', 'DeletionRequested', 'InternDestroyed']);

/**
 * Inline projection (same transaction as the append): a suspend or delete commits together with the removal
 * of the intern's daemon tokens, so no token outlives the `running` state it was revealed in. A reveal racing
 * the suspend cannot slip a token in afterwards: it re-reads the status under a row lock (see DaemonAccessService).
 */
export async function projectDaemonTokenRevocation(manager: EntityManager, events: StoredEvent[]): Promise<void> {
  for (const event of events) {
    if (event.streamType !== INTERN_STREAM_TYPE || !REVOKING_EVENTS.has(event.type)) continue;
    const internId = event.streamId.slice(internStreamId('').length);
    await revokeDaemonTokens(manager, internId);
  }
}
