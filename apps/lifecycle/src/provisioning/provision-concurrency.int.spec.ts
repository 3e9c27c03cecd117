import { randomUUID } from 'node:crypto';
import type { ServiceProcess } from '@interns/testing';
import { eventually, LifecycleHarness, principal } from '../testing/lifecycle.harness';

/**
 * PROVISION_CONCURRENCY across two lifecycle replicas: one process manager leads (advisory lock), the
 * limit holds for the whole system, and the standby takes over when the leader dies.
 */
describe('lifecycle: provisioning slots and leadership', () => {
  let h: LifecycleHarness;
  let first: ServiceProcess;
  const alice = principal(randomUUID());

  const leaderLocks = async () =>
    (await h.sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`))[0]?.n;

  beforeAll(async () => {
    h = await LifecycleHarness.start({ PROVISION_CONCURRENCY: '1' });
    first = await h.startLifecycle();
    // The relay and the process manager of the first replica lead; the second one stands by.
    await eventually(async () => expect(await leaderLocks()).toBe(2));
    await h.startLifecycle();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('keeps a second provision queued until the first one finished, oldest request first', async () => {
    const disk = h.driver.hold('prepareDisk');
    const a = (await h.create(alice, { name: 'ann', provision: true })).intern;
    await disk.arrived;
    const b = (await h.create(alice, { name: 'ben', provision: true })).intern;
    const c = (await h.create(alice, { name: 'cy', provision: true })).intern;
    await new Promise((done) => setTimeout(done, 500));
    expect((await h.get(alice, a.id)).status).toBe('provisioning');
    expect((await h.get(alice, b.id)).status).toBe('queued');
    expect((await h.get(alice, c.id)).status).toBe('queued');
    expect((await h.list(alice, ['queued'])).data.map((view) => view.name).sort()).toEqual(['ben', 'cy']);
    disk.release();

    await h.untilStatus(alice, c.id, 'running');
    // Each started only after the previous one was running.
    const position = async (id: string, type: string, last = false) => {
      const events = (await h.events(id)).filter((event) => event.type === type);
      return BigInt((last ? events[events.length - 1] : events[0])?.global_position ?? '0');
    };
    expect(await position(b.id, 'ProvisioningStarted')).toBeGreaterThan(
      await position(a.id, 'ProvisioningStepCompleted', true),
    );
    expect(await position(c.id, 'ProvisioningStarted')).toBeGreaterThan(
      await position(b.id, 'ProvisioningStepCompleted', true),
    );
  });

  it('the standby replica takes over when the leader dies', async () => {
    first.kill();
    await first.exited;
    await eventually(async () => expect(await leaderLocks()).toBe(2));
    const d = (await h.create(alice, { name: 'dee', provision: true })).intern;
    await h.untilStatus(alice, d.id, 'running');
  });
});
