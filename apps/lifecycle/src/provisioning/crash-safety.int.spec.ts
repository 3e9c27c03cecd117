import { randomUUID } from 'node:crypto';
import type { ServiceProcess } from '@interns/testing';
import { RUNTIME_OPS } from '../testing/runtime-driver.stand-in';
import { LifecycleHarness, principal } from '../testing/lifecycle.harness';

/**
 * SIGKILL the lifecycle process in the middle of provisioning and of teardown, start it again: the work
 * completes from the event log. The stand-in driver notes, for every call, whether the step it serves was
 * already recorded as completed when the call arrived: that must never be the case (a completed step is
 * never run again), and every step is recorded exactly once.
 */
describe('lifecycle: crash safety of the process manager', () => {
  let h: LifecycleHarness;
  let lifecycle: ServiceProcess;
  const alice = principal(randomUUID());

  beforeAll(async () => {
    h = await LifecycleHarness.start();
    lifecycle = await h.startLifecycle();
  });

  afterAll(async () => {
    await h?.stop();
  });

  const killLifecycle = async () => {
    lifecycle.kill();
    await lifecycle.exited;
  };

  const expectNoStepRunTwice = (internId: string) => {
    const repeated = h.driver.callsOf(internId).filter((call) => call.inspected === true);
    expect(repeated).toEqual([]);
  };

  const countsOf = (internId: string) =>
    Object.fromEntries(RUNTIME_OPS.map((op) => [op, h.driver.count(op, internId)]).filter(([, n]) => n !== 0));

  it('killed while a step is in flight: the step runs again after the restart, the others once', async () => {
    const boot = h.driver.hold('boot');
    const { intern } = await h.create(alice, { name: 'ada', provision: true });
    await boot.arrived;
    await killLifecycle();
    boot.release();
    lifecycle = await h.startLifecycle();

    await h.untilStatus(alice, intern.id, 'running');
    expectNoStepRunTwice(intern.id);
    // The boot cut short is asked again (the driver is idempotent); completed steps are not.
    expect(countsOf(intern.id)).toEqual({ prepareDisk: 1, boot: 2, health: 1 });
    const completed = (await h.events(intern.id)).filter((event) => event.type === 'ProvisioningStepCompleted');
    expect(completed.map((event) => event.data.step)).toEqual(['disk_prepare', 'hostname_assign', 'runtime_boot', 'health_await']);
    expect((await h.eventTypes(intern.id)).filter((type) => type === 'ProvisioningStarted')).toHaveLength(1);
  });

  it('killed right after the driver answered: the outcome is recorded once, no completed step repeats', async () => {
    h.driver.onAnswered('prepareDisk', () => lifecycle.kill());
    const { intern } = await h.create(alice, { name: 'bob', provision: true });
    await lifecycle.exited;
    h.driver.onAnswered('prepareDisk', () => undefined);
    lifecycle = await h.startLifecycle();

    await h.untilStatus(alice, intern.id, 'running');
    expectNoStepRunTwice(intern.id);
    expect(h.driver.count('prepareDisk', intern.id)).toBeLessThanOrEqual(2);
    expect(countsOf(intern.id)).toMatchObject({ boot: 1, health: 1 });
    const completed = (await h.events(intern.id)).filter((event) => event.type === 'ProvisioningStepCompleted');
    expect(completed.map((event) => event.data.step)).toEqual(['disk_prepare', 'hostname_assign', 'runtime_boot', 'health_await']);
  });

  it('killed in the middle of teardown: the teardown completes, each step recorded once', async () => {
    const { intern } = await h.create(alice, { name: 'cid', provision: true });
    await h.untilStatus(alice, intern.id, 'running');
    const archive = h.driver.hold('archive');
    await h.delete(alice, intern.id);
    await archive.arrived;
    await killLifecycle();
    archive.release();
    lifecycle = await h.startLifecycle();

    await h.untilGone(alice, intern.id);
    expectNoStepRunTwice(intern.id);
    expect(countsOf(intern.id)).toEqual({ prepareDisk: 1, boot: 1, health: 1, endRuns: 1, stop: 1, archive: 2, purgeTranscripts: 1, purgeEgressLog: 1, removeDisk: 1 });
    const steps = (await h.events(intern.id)).filter((event) => event.type === 'TeardownStepCompleted');
    expect(steps.map((event) => event.data.step)).toEqual([
      'runs_end',
      'runtime_stop',
      'workspace_archive',
      'vault_remove',
      'disk_remove',
    ]);
    expect((await h.eventTypes(intern.id)).filter((type) => type === 'InternDestroyed')).toHaveLength(1);
    expect(await h.sql(`SELECT 1 FROM lifecycle.vaults WHERE owner_intern_id = $1`, [intern.id])).toEqual([]);
  });

  it('killed right after a teardown step answered: the teardown completes, no completed step repeats', async () => {
    const { intern } = await h.create(alice, { name: 'dot', provision: true });
    await h.untilStatus(alice, intern.id, 'running');
    h.driver.onAnswered('stop', (call) => {
      if (call.internId === intern.id) lifecycle.kill();
    });
    await h.delete(alice, intern.id);
    await lifecycle.exited;
    h.driver.onAnswered('stop', () => undefined);
    lifecycle = await h.startLifecycle();

    await h.untilGone(alice, intern.id);
    expectNoStepRunTwice(intern.id);
    expect(h.driver.count('stop', intern.id)).toBeLessThanOrEqual(2);
    expect(countsOf(intern.id)).toMatchObject({ endRuns: 1, archive: 1, purgeTranscripts: 1, removeDisk: 1 });
    const steps = (await h.events(intern.id)).filter((event) => event.type === 'TeardownStepCompleted');
    expect(steps).toHaveLength(5);
  });
});
