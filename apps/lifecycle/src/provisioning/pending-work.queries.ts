import type { DataSource, EntityManager } from 'typeorm';
import type { InternStatus } from '@interns/contracts';
import { RUNTIME_STOP_FAILURE_PREFIX } from '@interns/lifecycle-domain';

/** The process manager's to-do list, read from the `lifecycle.interns` read model (partial index). */
export interface PendingIntern {
  id: string;
  workspaceId: string;
  status: InternStatus;
  /** The runtime may be up: booted and not stopped since. */
  runtimeActive: boolean;
}

export async function countProvisioning(manager: EntityManager): Promise<number> {
  const rows: { n: number }[] = await manager.query(
    `SELECT count(*)::int AS n FROM lifecycle.interns WHERE status = 'provisioning'`,
  );
  return rows[0]?.n ?? 0;
}

/**
 * Oldest provision request first (global position of the request event), skipping a workspace's requests
 * beyond `perWorkspace` provisioning at once: its own provisioning interns count, then its queue in order.
 */
export async function oldestQueued(manager: EntityManager, limit: number, perWorkspace: number): Promise<string[]> {
  const rows: { id: string }[] = await manager.query(
    `WITH busy AS (
       SELECT workspace_id, count(*)::int AS provisioning FROM lifecycle.interns
        WHERE status = 'provisioning' GROUP BY workspace_id
     ), waiting AS (
       SELECT id, workspace_id, queue_position,
              row_number() OVER (PARTITION BY workspace_id ORDER BY queue_position, id) AS place
         FROM lifecycle.interns WHERE status = 'queued'
     )
     SELECT waiting.id FROM waiting LEFT JOIN busy USING (workspace_id)
      WHERE waiting.place + coalesce(busy.provisioning, 0) <= $2
      ORDER BY waiting.queue_position, waiting.id
      LIMIT $1`,
    [limit, perWorkspace],
  );
  return rows.map((row) => row.id);
}

/**
 * Interns with a step to run: provisioning, tearing down, or stopped/failed with a runtime that may still
 * be up (it was booted and has not been stopped since), unless stopping it was given up on
 * (RuntimeStopFailed; the failure message stays until a provision or delete takes over).
 */
export async function pendingInterns(manager: EntityManager): Promise<PendingIntern[]> {
  return manager.query(
    `SELECT id, workspace_id AS "workspaceId", status, runtime_active AS "runtimeActive" FROM lifecycle.interns
      WHERE status IN ('provisioning', 'destroying')
         OR (runtime_active AND status IN ('stopped', 'failed')
             AND NOT starts_with(coalesce(last_failure_message, ''), $1))
      ORDER BY queue_position NULLS LAST, id`,
    [RUNTIME_STOP_FAILURE_PREFIX],
  );
}

/** After the runtime was stopped: only when the intern did not change since (`revision` = stream version). */
export async function clearRuntimeActive(dataSource: DataSource, internId: string, revision: number): Promise<void> {
  await dataSource.query(`UPDATE lifecycle.interns SET runtime_active = false WHERE id = $1 AND revision = $2`, [
    internId,
    revision,
  ]);
}
