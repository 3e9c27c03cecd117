import type { DataSource } from 'typeorm';

/** Host uids are 32-bit; stay below 2^31 so no tool reads one as negative. */
const MAX_UID = 2 ** 31 - 1;

/** Where a sandbox's host uid comes from. */
export interface SandboxUidSource {
  uidOf(internId: string): Promise<number>;
}

/**
 * The host uid (and gid, the same number) each intern's sandbox runs as: allocated once per intern in the
 * runs database, so it is distinct between interns, the same on every runs replica, and stable across runs
 * (files the intern wrote stay its own).
 */
export class SandboxUsers implements SandboxUidSource {
  private readonly known = new Map<string, number>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly uidBase: number,
  ) {}

  async uidOf(internId: string): Promise<number> {
    const cached = this.known.get(internId);
    if (cached !== undefined) return cached;
    await this.dataSource.query('INSERT INTO runs.sandbox_users (intern_id) VALUES ($1) ON CONFLICT (intern_id) DO NOTHING', [internId]);
    const [row]: { ordinal: number }[] = await this.dataSource.query('SELECT ordinal FROM runs.sandbox_users WHERE intern_id = $1', [
      internId,
    ]);
    const uid = this.uidBase + row.ordinal;
    if (uid > MAX_UID) throw new Error(`sandbox uid ${uid} is beyond ${MAX_UID}: lower SANDBOX_UID_BASE`);
    this.known.set(internId, uid);
    return uid;
  }
}
