import type { EntityManager } from 'typeorm';
import type { InternProgress } from '@interns/contracts';
import type { StoredEvent } from '@interns/event-store';
import {
  InternEvent,
  PROVISIONING_STEPS,
  PROVISIONING_TOTAL_STEPS,
  teardownFailureMessage,
} from '@interns/lifecycle-domain';

/** From the completion of this step on, the runtime may be booting (step 3 boots it). */
export const STEP_BEFORE_BOOT = 2;

/**
 * Projects intern events into `lifecycle.interns` inside the append transaction, so a read right after
 * a write sees it. Each update applies only on top of the previous revision; `updated_at` is the event's
 * time. `InternDestroyed` removes the row and the icon: the intern is gone and its name is free.
 */
export async function projectInternSummary(manager: EntityManager, events: StoredEvent[]): Promise<void> {
  for (const stored of events) {
    const event = { type: stored.type, data: stored.data } as InternEvent;
    const update = (changes: RowChanges) => updateRow(manager, stored, event.data.at, changes);
    switch (event.type) {
      case 'InternCreated': {
        const d = event.data;
        await manager.query(
          `INSERT INTO lifecycle.interns (id, organization_id, workspace_id, created_by, name, description,
             instructions, model, status, vault_id, attached_vault_id, icon_sha256, created_at, updated_at, revision)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'stopped', $9, $10, $11, $12, $12, $13)`,
          [
            d.internId,
            d.organizationId,
            d.workspaceId,
            d.createdBy,
            d.name,
            d.description,
            d.instructions,
            d.model,
            d.vaultId,
            d.attachedVaultId,
            d.iconSha256,
            d.at,
            stored.streamVersion,
          ],
        );
        break;
      }
      case 'InternUpdated': {
        const changes: RowChanges = {};
        for (const [column, value] of Object.entries(event.data.changes)) {
          if (UPDATABLE_COLUMNS.has(column)) changes[column] = value;
        }
        await update(changes);
        break;
      }
      case 'ProvisionRequested':
        await update({
          status: 'queued',
          progress: null,
          last_failure_message: null,
          queue_position: stored.globalPosition,
        });
        break;
      case 'ChatappInstallAwaited':
        await update({ status: 'awaiting_chatapp_install' });
        break;
      case 'ChatappInstallRecorded':
        await update({ status: 'queued' });
        break;
      case 'ProvisioningStarted':
        await update({ status: 'provisioning', progress: progressAt(1) });
        break;
      case 'ProvisioningStepCompleted': {
        const { step, hostname } = event.data;
        const changes: RowChanges =
          step >= PROVISIONING_TOTAL_STEPS ? { status: 'running', progress: null } : { progress: progressAt(step + 1) };
        if (hostname !== null) changes.hostname = hostname;
        if (step === STEP_BEFORE_BOOT) changes.runtime_active = true;
        await update(changes);
        break;
      }
      case 'ProvisioningFailed':
        await update({ status: 'failed', progress: null, last_failure_message: event.data.message });
        break;
      case 'InternSuspended':
        await update({ status: 'stopped', progress: null });
        break;
      case 'DeletionRequested':
        await update({ status: 'destroying', progress: null, last_failure_message: null });
        break;
      case 'TeardownStepCompleted':
        await update(event.data.step === 'runtime_stop' ? { runtime_active: false } : {});
        break;
      case 'TeardownFailed':
        await update({ status: 'destroy_failed', last_failure_message: teardownFailureMessage(event.data) });
        break;
      case 'InternDestroyed': {
        const internId = internIdOf(stored);
        await manager.query(`DELETE FROM lifecycle.interns WHERE id = $1`, [internId]);
        await manager.query(`DELETE FROM lifecycle.icons WHERE intern_id = $1`, [internId]);
        break;
      }
      default:
        assertNever(event);
    }
  }
}

type RowChanges = Record<string, unknown>;

/** Column values bound as parameters; `progress` is jsonb. Column names come from this file only. */
async function updateRow(manager: EntityManager, stored: StoredEvent, at: string, changes: RowChanges): Promise<void> {
  const sets: string[] = [];
  const values: unknown[] = [];
  for (const [column, value] of Object.entries(changes)) {
    const isJson = column === 'progress';
    values.push(isJson && value !== null ? JSON.stringify(value) : value);
    sets.push(`${column} = $${values.length}${isJson ? '::jsonb' : ''}`);
  }
  values.push(at, stored.streamVersion, internIdOf(stored));
  const n = values.length;
  await manager.query(
    `UPDATE lifecycle.interns SET ${[...sets, `updated_at = $${n - 2}`, `revision = $${n - 1}`].join(', ')}
     WHERE id = $${n} AND revision = $${n - 1} - 1`,
    values,
  );
}

/** The `progress` object while step `step` runs (the same as the decider's `progressOf`). */
export function progressAt(step: number): InternProgress {
  return {
    step_label: PROVISIONING_STEPS[step - 1] ?? 'Provisioning',
    step_number: step,
    total_steps: PROVISIONING_TOTAL_STEPS,
  };
}

const UPDATABLE_COLUMNS: ReadonlySet<string> = new Set(['name', 'description', 'instructions', 'model']);
const STREAM_PREFIX = 'intern-';
function internIdOf(stored: StoredEvent): string {
  return stored.streamId.slice(STREAM_PREFIX.length);
}

function assertNever(value: never): never {
  throw new Error(`unprojected event: ${JSON.stringify(value)}`);
}
