import type { EntityManager } from 'typeorm';
import { EventData, type ReceivedEvent } from './integration-event';
import type { FactsApplierOf } from './fact-applier';

/** Analytics keeps torn-down interns (their runs still count) with this status; lifecycle forgets them. */
const DELETED_STATUS = 'destroyed';

/** Columns that always take the value of the latest event (by sequence) that set them. */
type LatestColumn = 'name' | 'model' | 'status';

async function ensureIntern(manager: EntityManager, internId: string): Promise<void> {
  await manager.query('INSERT INTO analytics.intern_facts (intern_id) VALUES ($1) ON CONFLICT (intern_id) DO NOTHING', [internId]);
}

/** Sets `column` unless a later event (higher sequence) has set it already. */
async function setLatest(
  manager: EntityManager,
  internId: string,
  column: LatestColumn,
  value: string | null,
  sequence: number,
  extra: { set: string; values: unknown[] } = { set: '', values: [] },
): Promise<void> {
  await manager.query(
    `UPDATE analytics.intern_facts SET ${column} = $2, ${column}_version = $3${extra.set}
      WHERE intern_id = $1 AND (${column}_version IS NULL OR ${column}_version < $3)`,
    [internId, value, sequence, ...extra.values],
  );
}

async function recordStatus(manager: EntityManager, internId: string, event: ReceivedEvent, status: string): Promise<void> {
  await manager.query(
    `INSERT INTO analytics.intern_status_changes (event_id, intern_id, stream_version, status, at)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (event_id) DO NOTHING`,
    [event.id, internId, event.sequence, status, event.created_at],
  );
  await setLatest(manager, internId, 'status', status, event.sequence, { set: ', status_at = $4', values: [event.created_at] });
}

async function internCreated(manager: EntityManager, event: ReceivedEvent, data: EventData): Promise<void> {
  const internId = data.string('intern_id');
  const workspaceId = data.string('workspace_id');
  const organizationId = data.string('organization_id');
  await ensureIntern(manager, internId);
  await manager.query(
    `UPDATE analytics.intern_facts
        SET organization_id = $2, workspace_id = $3, created_by = $4, created_at = $5
      WHERE intern_id = $1`,
    [internId, organizationId, workspaceId, data.nullableString('created_by'), event.created_at],
  );
  await setLatest(manager, internId, 'name', data.string('name'), event.sequence);
  await setLatest(manager, internId, 'model', data.nullableString('model'), event.sequence);
  // Runs of this intern recorded before its creation arrived.
  await manager.query(
    'UPDATE analytics.run_facts SET workspace_id = $2, organization_id = $3 WHERE intern_id = $1',
    [internId, workspaceId, organizationId],
  );
}

async function internUpdated(manager: EntityManager, event: ReceivedEvent, data: EventData): Promise<void> {
  const internId = data.string('intern_id');
  await ensureIntern(manager, internId);
  await setLatest(manager, internId, 'name', data.string('name'), event.sequence);
  await setLatest(manager, internId, 'model', data.nullableString('model'), event.sequence);
}

/** One row per change of status; a move of the provisioning progress alone is no status change. */
async function statusChanged(manager: EntityManager, event: ReceivedEvent, data: EventData): Promise<void> {
  const internId = data.string('intern_id');
  const status = data.string('status');
  await ensureIntern(manager, internId);
  if (status !== data.nullableString('previous_status')) await recordStatus(manager, internId, event, status);
}

async function internDeleted(manager: EntityManager, event: ReceivedEvent, data: EventData): Promise<void> {
  const internId = data.string('intern_id');
  await ensureIntern(manager, internId);
  await manager.query('UPDATE analytics.intern_facts SET destroyed_at = $2 WHERE intern_id = $1', [internId, event.created_at]);
  await recordStatus(manager, internId, event, DELETED_STATUS);
}

/**
 * Lifecycle's integration events into `intern_facts` and `intern_status_changes`. Fields that change over
 * time keep the value of the highest sequence seen, so the order of arrival does not matter.
 */
export const INTERN_FACTS_APPLIERS: FactsApplierOf<'intern.created' | 'intern.updated' | 'intern.status_changed' | 'intern.deleted'> = {
  'intern.created': internCreated,
  'intern.updated': internUpdated,
  'intern.status_changed': statusChanged,
  'intern.deleted': internDeleted,
};
