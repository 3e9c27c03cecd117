/**
 * The provisioning process manager at rest: with no intern to provision or tear down and no step in flight, it
 * looks at the read model about once a second (QUIET_POLL_MS), not every poll interval (150 ms), and a create then
 * still provisions (that the create's wake cuts the quiet wait short is WorkerLoop's spec). Measured on the
 * database's own commit count (every look is a few autocommitted statements), over a window long enough for
 * PostgreSQL to have flushed its statistics.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LifecycleHarness, principal } from '../testing/lifecycle.harness';

/** Commits of every session on the spec's database so far, as PostgreSQL's statistics have them. */
async function commits(h: LifecycleHarness): Promise<number> {
  const [row] = await h.sql<{ n: string }>('SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()');
  return Number(row.n);
}

describe('lifecycle: the process manager at rest', () => {
  let h: LifecycleHarness;
  const alice = principal(randomUUID());

  beforeAll(async () => {
    h = await LifecycleHarness.start();
    await h.startLifecycle();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('looks at its work about once a second while there is none, and provisions a new intern', async () => {
    // Start-up's own statements flushed to the statistics first.
    await sleep(1_500);
    const before = await commits(h);
    await sleep(4_000);
    const perSecond = ((await commits(h)) - before) / 4;
    // At rest: the outbox relay's poll (10 a second) and the process manager's looks, 4 statements each: about
    // 14 a second now; looking every 150 ms made it about 37.
    expect(perSecond).toBeLessThan(25);

    const { intern } = await h.create(alice, { name: 'quiet', provision: true, model: 'acme/m1' });
    expect(await h.untilStatus(alice, intern.id, 'running')).toMatchObject({ status: 'running', progress: null });
  });
});
