import type { EntityManager } from 'typeorm';
import { type StoredEvent, StreamStates } from '@interns/event-store';
import { assignments } from '@interns/database';
import { INTERN_FOLD, INTERN_STREAM_TYPE, InternCreated, InternPresent, InternState, progressOf } from '@interns/lifecycle-domain';
import { LIFECYCLE_SCHEMA } from '../migrations';

/** Remembers nothing: the append this runs in may still roll back. */
const states = new StreamStates<InternState>(LIFECYCLE_SCHEMA, INTERN_FOLD);

/**
 * Projects intern events into `lifecycle.interns` inside the append transaction, so a read right after a
 * write sees it. The row is the decider's state after each event (status, progress, failure message, ...):
 * the intern's rules live in its `evolve` only. Each update applies only on top of the previous revision;
 * `updated_at` is the event's time. When the intern is gone the row and the icon go too: its name is free.
 */
export async function projectInternSummary(manager: EntityManager, events: StoredEvent[]): Promise<void> {
  const first = events[0];
  if (first === undefined || first.streamType !== INTERN_STREAM_TYPE) return;
  let state = await states.before(manager, first.streamId, first.streamVersion);
  for (const stored of events) {
    const { event, before, after } = states.apply(stored, state);
    state = after;
    if (after.kind === 'present' && before.kind !== 'present') await insertRow(manager, event, after);
    else if (after.kind === 'present' && before.kind === 'present') await updateRow(manager, event, before, after);
    else if (after.kind === 'gone' && before.kind === 'present') await deleteRow(manager, before.id);
  }
}

/** The columns that show the intern's state. */
function stateColumns(intern: InternPresent): RowChanges {
  return {
    name: intern.name,
    description: intern.description,
    instructions: intern.instructions,
    model: intern.model,
    status: intern.status,
    last_failure_message: intern.lastFailureMessage,
    progress: progressOf(intern),
    hostname: intern.hostname,
    egress_allow: intern.egressAllow,
  };
}

async function insertRow(manager: EntityManager, event: StoredEvent, intern: InternPresent): Promise<void> {
  const d = event.data as InternCreated['data'];
  await manager.query(
    `INSERT INTO lifecycle.interns (id, organization_id, workspace_id, created_by, name, description,
       instructions, model, status, vault_id, attached_vault_id, icon_sha256, created_at, updated_at, revision)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14)`,
    [
      intern.id,
      d.organizationId,
      intern.workspaceId,
      d.createdBy,
      intern.name,
      intern.description,
      intern.instructions,
      intern.model,
      intern.status,
      d.vaultId,
      d.attachedVaultId,
      d.iconSha256,
      d.at,
      event.streamVersion,
    ],
  );
}

async function updateRow(manager: EntityManager, event: StoredEvent, before: InternPresent, after: InternPresent) {
  const changes = stateColumns(after);
  // The process manager promotes queued interns in the order they asked.
  if (event.type === 'ProvisionRequested') changes.queue_position = event.globalPosition;
  // From the boot on, the runtime may be up until teardown stops it (or the process manager does).
  if (after.provisioningStep === 'runtime_boot' && before.provisioningStep !== 'runtime_boot') changes.runtime_active = true;
  if (stoppedByTeardown(after) && !stoppedByTeardown(before)) changes.runtime_active = false;
  await writeRow(manager, event, after.id, changes);
}

function stoppedByTeardown(intern: InternPresent): boolean {
  return intern.teardown?.done.includes('runtime_stop') ?? false;
}

async function deleteRow(manager: EntityManager, internId: string): Promise<void> {
  await manager.query(`DELETE FROM lifecycle.interns WHERE id = $1`, [internId]);
  await manager.query(`DELETE FROM lifecycle.icons WHERE intern_id = $1`, [internId]);
}

type RowChanges = Record<string, unknown>;

/** Column values bound as parameters; `progress` is jsonb. Column names come from this file only. */
async function writeRow(manager: EntityManager, event: StoredEvent, internId: string, changes: RowChanges): Promise<void> {
  const { sets, values } = assignments(changes, ['progress']);
  values.push(event.data['at'], event.streamVersion, internId);
  const n = values.length;
  await manager.query(
    `UPDATE lifecycle.interns SET ${[...sets, `updated_at = $${n - 2}`, `revision = $${n - 1}`].join(', ')}
     WHERE id = $${n} AND revision = $${n - 1} - 1`,
    values,
  );
}
