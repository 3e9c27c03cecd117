import type { EntityManager } from 'typeorm';
import type { StoredEvent } from '@interns/event-store';
import type { InternEvent } from '@interns/lifecycle-domain';

/**
 * Projects intern events into `lifecycle.interns` inside the append transaction, so a read right after
 * a write sees it. Each update applies only on top of the previous revision.
 */
export async function projectInternSummary(manager: EntityManager, events: StoredEvent[]): Promise<void> {
  for (const stored of events) {
    const event = { type: stored.type, data: stored.data } as InternEvent;
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
        const sets: string[] = [];
        const values: unknown[] = [];
        for (const [column, value] of Object.entries(event.data.changes)) {
          if (!UPDATABLE_COLUMNS.has(column)) continue;
          values.push(value);
          sets.push(`${column} = $${values.length}`);
        }
        values.push(event.data.at, stored.streamVersion, internIdOf(stored));
        const n = values.length;
        await manager.query(
          `UPDATE lifecycle.interns SET ${[...sets, `updated_at = $${n - 2}`, `revision = $${n - 1}`].join(', ')}
           WHERE id = $${n} AND revision = $${n - 1} - 1`,
          values,
        );
        break;
      }
      default:
        break;
    }
  }
}

const UPDATABLE_COLUMNS: ReadonlySet<string> = new Set(['name', 'description', 'instructions', 'model']);
const STREAM_PREFIX = 'intern-';
function internIdOf(stored: StoredEvent): string {
  return stored.streamId.slice(STREAM_PREFIX.length);
}
