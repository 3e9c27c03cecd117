import type { EntityManager } from 'typeorm';
import { EventData, IntegrationEvent } from '../integration-events/integration-event';

/** CONTRACT section 5: provisioning has 4 steps; the intern is `running` once the last one completed. */
const PROVISIONING_TOTAL_STEPS = 4;

/** Lifecycle events that set the intern's status (as the lifecycle decider does), by event type. */
const STATUS_OF = new Map<string, string>([
  ['InternCreated', 'stopped'],
  ['ProvisionRequested', 'queued'],
  ['ChatappInstallAwaited', 'awaiting_chatapp_install'],
  ['ChatappInstallRecorded', 'queued'],
  ['ProvisioningStarted', 'provisioning'],
  ['ProvisioningFailed', 'failed'],
  ['InternSuspended', 'stopped'],
  ['DeletionRequested', 'destroying'],
  ['TeardownFailed', 'destroy_failed'],
  // Analytics keeps torn-down interns (their runs still count); lifecycle forgets them.
  ['InternDestroyed', 'destroyed'],
]);

/** Columns that always take the value of the latest event (by stream version) that set them. */
type LatestColumn = 'name' | 'model' | 'status';

async function ensureIntern(manager: EntityManager, internId: string): Promise<void> {
  await manager.query('INSERT INTO analytics.intern_facts (intern_id) VALUES ($1) ON CONFLICT (intern_id) DO NOTHING', [internId]);
}

/** Sets `column` unless a later event (higher stream version) has set it already. */
async function setLatest(
  manager: EntityManager,
  internId: string,
  column: LatestColumn,
  value: string | null,
  version: number,
  extra: { set: string; values: unknown[] } = { set: '', values: [] },
): Promise<void> {
  await manager.query(
    `UPDATE analytics.intern_facts SET ${column} = $2, ${column}_version = $3${extra.set}
      WHERE intern_id = $1 AND (${column}_version IS NULL OR ${column}_version < $3)`,
    [internId, value, version, ...extra.values],
  );
}

async function setStatus(manager: EntityManager, internId: string, event: IntegrationEvent, status: string, at: string) {
  await manager.query(
    `INSERT INTO analytics.intern_status_changes (event_id, intern_id, stream_version, status, at)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (event_id) DO NOTHING`,
    [event.event_id, internId, event.stream_version, status, at],
  );
  await setLatest(manager, internId, 'status', status, event.stream_version, { set: ', status_at = $4', values: [at] });
}

async function internCreated(manager: EntityManager, internId: string, event: IntegrationEvent, data: EventData): Promise<void> {
  const workspaceId = data.string('workspaceId');
  const organizationId = data.string('organizationId');
  await manager.query(
    `UPDATE analytics.intern_facts
        SET organization_id = $2, workspace_id = $3, created_by = $4, created_at = $5
      WHERE intern_id = $1`,
    [internId, organizationId, workspaceId, data.nullableString('createdBy'), data.at()],
  );
  await setLatest(manager, internId, 'name', data.string('name'), event.stream_version);
  await setLatest(manager, internId, 'model', data.nullableString('model'), event.stream_version);
  // Runs of this intern recorded before its creation event arrived.
  await manager.query(
    'UPDATE analytics.run_facts SET workspace_id = $2, organization_id = $3 WHERE intern_id = $1',
    [internId, workspaceId, organizationId],
  );
}

async function internUpdated(manager: EntityManager, internId: string, event: IntegrationEvent, data: EventData): Promise<void> {
  const changes = data.record('changes');
  if (changes.has('name')) await setLatest(manager, internId, 'name', changes.string('name'), event.stream_version);
  if (changes.has('model')) await setLatest(manager, internId, 'model', changes.nullableString('model'), event.stream_version);
}

const INTERN_STREAM_PREFIX = 'intern-';

/** The intern of an `intern-<intern id>` stream; null for lifecycle's other streams (e.g. `daemon-audit-<id>`). */
export function internIdOfStream(streamId: string): string | null {
  return streamId.startsWith(INTERN_STREAM_PREFIX) ? streamId.slice(INTERN_STREAM_PREFIX.length) : null;
}

/**
 * Applies one lifecycle event (stream type `intern`) to `intern_facts` and `intern_status_changes`. Fields
 * that change over time keep the value of the highest stream version seen, so the order of arrival does
 * not matter.
 */
export async function applyLifecycleEvent(manager: EntityManager, event: IntegrationEvent): Promise<void> {
  const internId = internIdOfStream(event.stream_id);
  // Reveals and signings are audit records, not intern facts.
  if (internId === null) return;
  const data = new EventData(event);
  const at = data.at();
  await ensureIntern(manager, internId);
  if (event.type === 'InternCreated') await internCreated(manager, internId, event, data);
  if (event.type === 'InternUpdated') await internUpdated(manager, internId, event, data);
  if (event.type === 'InternDestroyed') {
    await manager.query('UPDATE analytics.intern_facts SET destroyed_at = $2 WHERE intern_id = $1', [internId, at]);
  }
  const status =
    event.type === 'ProvisioningStepCompleted'
      ? data.integer('step') >= PROVISIONING_TOTAL_STEPS
        ? 'running'
        : null
      : (STATUS_OF.get(event.type) ?? null);
  if (status !== null) await setStatus(manager, internId, event, status, at);
}
