import type { DataSource, QueryRunner } from 'typeorm';

/**
 * Leadership among replicas (the outbox relays, the lifecycle process manager): a session-level
 * `pg_try_advisory_lock` held on a dedicated pooled connection. The leader also reads through that
 * connection, so losing it ends the reads and the lock together; standbys try again on every poll.
 */
export class LeaderLease {
  private runner: QueryRunner | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly lockKey: [string, string],
  ) {}

  get isLeader(): boolean {
    return this.runner !== null;
  }

  /** The leader's connection, taking the lock when free; null while another instance leads. */
  async acquire(): Promise<QueryRunner | null> {
    if (this.runner) return this.runner;
    const runner = this.dataSource.createQueryRunner();
    let locked = false;
    try {
      const rows: { locked: boolean }[] = await runner.query(
        'SELECT pg_try_advisory_lock(hashtext($1), hashtext($2)) AS locked',
        this.lockKey,
      );
      locked = rows[0]?.locked === true;
    } finally {
      if (!locked) await runner.release();
    }
    if (!locked) return null;
    this.runner = runner;
    return runner;
  }

  async resign(): Promise<void> {
    const runner = this.runner;
    if (!runner) return;
    this.runner = null;
    try {
      await runner.query('SELECT pg_advisory_unlock(hashtext($1), hashtext($2))', this.lockKey);
    } catch {
      // The session is unusable; end it so the pool cannot hand out a connection that still holds the lock.
      await Promise.resolve(runner.connect())
        .then((client: { end?: () => Promise<void> }) => client.end?.())
        .catch(() => undefined);
    } finally {
      await runner.release();
    }
  }
}
