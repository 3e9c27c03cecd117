import { randomUUID } from 'node:crypto';
import type { ServiceProcess } from '@interns/testing';
import { LifecycleHarness, principal } from '../testing/lifecycle.harness';

const HEALTH_TIMEOUT_MS = 1500;

/**
 * RUNTIME_HEALTH_TIMEOUT_MS counts from the first health check a lifecycle process makes: one that was down
 * longer than the timeout gives the runtime its full wait again instead of failing it at once, and the wait
 * stays bounded after the restart.
 */
describe('lifecycle: the health wait across a restart', () => {
  let h: LifecycleHarness;
  let lifecycle: ServiceProcess;
  const alice = principal(randomUUID());

  beforeAll(async () => {
    h = await LifecycleHarness.start({ RUNTIME_HEALTH_TIMEOUT_MS: String(HEALTH_TIMEOUT_MS) });
    lifecycle = await h.startLifecycle();
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** Boots an intern whose runtime answers unhealthy, lets lifecycle check it once, then keeps it down past the timeout. */
  async function restartedMidWait(name: string): Promise<{ id: string; checksBefore: number }> {
    const { intern } = await h.create(alice, { name });
    h.driver.behave('health', { kind: 'unhealthy', detail: 'runtime still starting' }, intern.id);
    await h.provision(alice, intern.id);
    await until(() => h.driver.count('health', intern.id) >= 1);
    lifecycle.kill();
    await lifecycle.exited;
    await new Promise((done) => setTimeout(done, HEALTH_TIMEOUT_MS + 500));
    const checksBefore = h.driver.count('health', intern.id);
    lifecycle = await h.startLifecycle();
    return { id: intern.id, checksBefore };
  }

  it('a runtime that becomes healthy soon after the restart runs, although the boot is older than the timeout', async () => {
    const { id, checksBefore } = await restartedMidWait('hal');
    await until(() => h.driver.count('health', id) > checksBefore);
    h.driver.behave('health', { kind: 'ok' }, id);
    const running = await h.untilStatus(alice, id, 'running');
    expect(running.last_failure_message).toBeNull();
  });

  it('a runtime that stays unhealthy still fails, the timeout after the first check since the restart', async () => {
    const { id, checksBefore } = await restartedMidWait('kit');
    await until(() => h.driver.count('health', id) > checksBefore);
    const firstCheck = Date.now();
    const failed = await h.untilStatus(alice, id, 'failed');
    expect(Date.now() - firstCheck).toBeGreaterThanOrEqual(HEALTH_TIMEOUT_MS - 300);
    expect(failed.last_failure_message).toBe('runtime did not become healthy within 1.5 s: runtime still starting');
    expect(h.driver.count('health', id) - checksBefore).toBeGreaterThan(1);
  });
});

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((done) => setTimeout(done, 25));
  }
}
