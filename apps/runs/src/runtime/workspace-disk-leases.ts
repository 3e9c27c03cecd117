import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';

/** How often a holder renews its leases, and how long an unrenewed lease keeps others out (a holder that died). */
export const LEASE_RENEW_MS = 10_000;
export const LEASE_EXPIRY_MS = 30_000;

/** Who may mount an intern's workspace image: one runs process at a time. */
export interface WorkspaceDiskLeases {
  /** Takes the intern's lease (or keeps it); false while another live process holds it. */
  claim(internId: string): Promise<boolean>;
  release(internId: string): Promise<void>;
  /** Stops renewing and gives back every lease this process holds. */
  releaseAll(): Promise<void>;
}

/**
 * Leases in `runs.workspace_disk_leases`, renewed together every LEASE_RENEW_MS while held. A lease not renewed
 * for LEASE_EXPIRY_MS (its process died with the image still in its mount namespace, which the kernel then
 * released) may be taken over.
 */
export class PostgresWorkspaceDiskLeases implements WorkspaceDiskLeases {
  readonly holder = randomUUID();
  private readonly held = new Set<string>();
  private renewal: NodeJS.Timeout | undefined;

  constructor(private readonly dataSource: DataSource) {}

  async claim(internId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO runs.workspace_disk_leases (intern_id, holder) VALUES ($1, $2)
       ON CONFLICT (intern_id) DO UPDATE SET holder = EXCLUDED.holder, renewed_at = now()
         WHERE workspace_disk_leases.holder = EXCLUDED.holder
            OR workspace_disk_leases.renewed_at < now() - make_interval(secs => $3::double precision / 1000)
       RETURNING intern_id`,
      [internId, this.holder, LEASE_EXPIRY_MS],
    );
    if (rows.length === 0) return false;
    this.held.add(internId);
    this.renewal ??= setInterval(() => void this.renew(), LEASE_RENEW_MS).unref();
    return true;
  }

  async release(internId: string): Promise<void> {
    this.held.delete(internId);
    await this.dataSource.query('DELETE FROM runs.workspace_disk_leases WHERE intern_id = $1 AND holder = $2', [internId, this.holder]);
  }

  async releaseAll(): Promise<void> {
    clearInterval(this.renewal);
    this.renewal = undefined;
    this.held.clear();
    await this.dataSource.query('DELETE FROM runs.workspace_disk_leases WHERE holder = $1', [this.holder]);
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    // A missed renewal (the database away for a moment) is made up by the next; the expiry is three periods.
    await this.dataSource
      .query('UPDATE runs.workspace_disk_leases SET renewed_at = now() WHERE holder = $1', [this.holder])
      .catch(() => undefined);
  }
}

/** For a host whose workspace images no other process mounts (tests of the disks themselves). */
export function soleHolderLeases(): WorkspaceDiskLeases {
  return { claim: async () => true, release: async () => undefined, releaseAll: async () => undefined };
}
