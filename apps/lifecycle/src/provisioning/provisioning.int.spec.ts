import { randomUUID } from 'node:crypto';
import { eventually, INTERN_DOMAIN, LifecycleHarness, principal, reasonOf } from '../testing/lifecycle.harness';

/**
 * Provisioning, suspend, teardown and the chat-app wait, through lifecycle's NATS subjects against the
 * built service, with a stand-in runtime driver on real NATS.
 */
describe('lifecycle: provisioning and teardown', () => {
  let h: LifecycleHarness;
  const WS = randomUUID();
  const alice = principal(WS);
  const STOP_ATTEMPTS = 3;

  beforeAll(async () => {
    h = await LifecycleHarness.start({ RUNTIME_HEALTH_TIMEOUT_MS: '1500', RUNTIME_STOP_ATTEMPTS: String(STOP_ATTEMPTS) });
    await h.startLifecycle();
  });

  afterAll(async () => {
    await h?.stop();
  });

  const hostnameOf = (name: string, id: string) => `${name}-${id.replace(/-/g, '').slice(0, 8)}.${INTERN_DOMAIN}`;

  async function runningIntern(name: string, who = alice) {
    const { intern } = await h.create(who, { name, provision: true, model: 'acme/m1' });
    return h.untilStatus(who, intern.id, 'running');
  }

  it('create with provision: queued, then provisioning steps 1 to 4 with progress, then running with its hostname', async () => {
    const disk = h.driver.hold('prepareDisk');
    const boot = h.driver.hold('boot');
    const health = h.driver.hold('health');
    const { intern } = await h.create(alice, { name: 'ada', provision: true, model: 'acme/m1' });
    expect(intern).toMatchObject({ status: 'queued', progress: null, hostname: null });

    await disk.arrived;
    expect(await h.get(alice, intern.id)).toMatchObject({
      status: 'provisioning',
      progress: { step_label: 'Preparing workspace disk', step_number: 1, total_steps: 4 },
      hostname: null,
    });
    disk.release();
    await boot.arrived;
    const booting = await h.get(alice, intern.id);
    expect(booting).toMatchObject({
      status: 'provisioning',
      progress: { step_label: 'Booting runtime', step_number: 3, total_steps: 4 },
      hostname: hostnameOf('ada', intern.id),
    });
    expect(Date.parse(booting.updated_at)).toBeGreaterThan(Date.parse(intern.updated_at) - 1);
    boot.release();
    await health.arrived;
    expect((await h.get(alice, intern.id)).progress).toEqual({
      step_label: 'Waiting for runtime health',
      step_number: 4,
      total_steps: 4,
    });
    health.release();

    const running = await h.untilStatus(alice, intern.id, 'running');
    expect(running).toMatchObject({ progress: null, hostname: hostnameOf('ada', intern.id), last_failure_message: null });
    expect(await h.eventTypes(intern.id)).toEqual([
      'InternCreated',
      'ProvisionRequested',
      'ProvisioningStarted',
      'ProvisioningStepCompleted',
      'ProvisioningStepCompleted',
      'ProvisioningStepCompleted',
      'ProvisioningStepCompleted',
    ]);
    const steps = (await h.events(intern.id)).filter((e) => e.type === 'ProvisioningStepCompleted').map((e) => e.data.step);
    expect(steps).toEqual(['disk_prepare', 'hostname_assign', 'runtime_boot', 'health_await']);
    const bootCall = h.driver.callsOf(intern.id).find((call) => call.op === 'boot');
    expect(bootCall?.data).toMatchObject({ internId: intern.id, model: 'acme/m1', hostname: hostnameOf('ada', intern.id) });
    expect(h.driver.callsOf(intern.id).map((call) => call.op)).toEqual(['prepareDisk', 'boot', 'health']);
  });

  it('suspend stops the runtime; provision brings it back; provision while running is intern_busy', async () => {
    const intern = await runningIntern('bea');
    expect(await reasonOf(h.provision(alice, intern.id))).toBe('intern_busy');

    expect(await h.suspend(alice, intern.id)).toEqual({ suspended: true });
    expect(await h.get(alice, intern.id)).toMatchObject({ status: 'stopped', progress: null });
    await eventually(async () => {
      const [row] = await h.sql<{ runtime_active: boolean }>(`SELECT runtime_active FROM lifecycle.interns WHERE id = $1`, [
        intern.id,
      ]);
      expect(row?.runtime_active).toBe(false);
    });
    expect(h.driver.count('endRuns', intern.id)).toBe(1);
    expect(h.driver.count('stop', intern.id)).toBe(1);
    // Suspend while stopped: 200, nothing happens.
    expect(await h.suspend(alice, intern.id)).toEqual({ suspended: true });
    expect(await h.eventTypes(intern.id)).toHaveLength(8);

    expect(await h.provision(alice, intern.id)).toEqual({ provisioning: true });
    await h.untilStatus(alice, intern.id, 'running');
    expect(h.driver.count('prepareDisk', intern.id)).toBe(2);
    expect(h.driver.count('boot', intern.id)).toBe(2);
    expect(h.driver.count('stop', intern.id)).toBe(1);
  });

  async function runtimeActive(internId: string): Promise<boolean | undefined> {
    const [row] = await h.sql<{ runtime_active: boolean }>(`SELECT runtime_active FROM lifecycle.interns WHERE id = $1`, [internId]);
    return row?.runtime_active;
  }

  /** A running intern, suspended while the driver refuses to stop it, until lifecycle gives up. */
  async function stopGivenUp(name: string) {
    const intern = await runningIntern(name);
    h.driver.behave('stop', { kind: 'fail', message: 'vm wedged' }, intern.id);
    expect(await h.suspend(alice, intern.id)).toEqual({ suspended: true });
    await eventually(async () =>
      expect(await h.get(alice, intern.id)).toMatchObject({
        status: 'stopped',
        last_failure_message: 'runtime_stop_failed: stopping the runtime refused: vm wedged',
      }),
    );
    expect(h.driver.count('stop', intern.id)).toBe(STOP_ATTEMPTS);
    expect((await h.eventTypes(intern.id)).filter((type) => type === 'RuntimeStopFailed')).toHaveLength(1);
    h.driver.behave('stop', { kind: 'ok' }, intern.id);
    return intern;
  }

  it('a runtime stop the driver keeps refusing: given up after RUNTIME_STOP_ATTEMPTS, recorded; provision recovers', async () => {
    const intern = await stopGivenUp('gus');
    // Longer than the backoff after the last refusal would be (200 ms doubling): nobody asks again.
    await new Promise((done) => setTimeout(done, 2_000));
    expect(h.driver.count('stop', intern.id)).toBe(STOP_ATTEMPTS);
    expect(await runtimeActive(intern.id)).toBe(true);
    // Suspend while stopped: 200, nothing new.
    expect(await h.suspend(alice, intern.id)).toEqual({ suspended: true });

    expect(await h.provision(alice, intern.id)).toEqual({ provisioning: true });
    expect(await h.untilStatus(alice, intern.id, 'running')).toMatchObject({ last_failure_message: null });
    expect(await h.suspend(alice, intern.id)).toEqual({ suspended: true });
    await eventually(async () => expect(await runtimeActive(intern.id)).toBe(false));
    expect(h.driver.count('stop', intern.id)).toBe(STOP_ATTEMPTS + 1);
  });

  it('a runtime stop given up on: delete stops the runtime in its teardown', async () => {
    const intern = await stopGivenUp('hal');
    expect(await h.delete(alice, intern.id)).toEqual({ deleting: true });
    await h.untilGone(alice, intern.id);
    expect(h.driver.count('stop', intern.id)).toBe(STOP_ATTEMPTS + 1);
  });

  it('suspends a queued or provisioning intern, and provision while queued changes nothing', async () => {
    const boot = h.driver.hold('boot');
    const { intern } = await h.create(alice, { name: 'cat', provision: true });
    expect(await h.provision(alice, intern.id)).toEqual({ provisioning: true });
    await boot.arrived;
    expect(await h.provision(alice, intern.id)).toEqual({ provisioning: true });
    expect(await h.suspend(alice, intern.id)).toEqual({ suspended: true });
    boot.release();
    expect(await h.get(alice, intern.id)).toMatchObject({ status: 'stopped', progress: null });
    // The boot may have happened: the runtime is stopped after it answered.
    await eventually(async () => expect(h.driver.count('stop', intern.id)).toBe(1));
    expect((await h.eventTypes(intern.id)).filter((type) => type === 'ProvisionRequested')).toHaveLength(1);
    expect(await h.get(alice, intern.id)).toMatchObject({ status: 'stopped' });
  });

  it('delete tears down step by step; then the intern is gone and its name is free', async () => {
    const intern = await runningIntern('dan');
    const vaults = async () =>
      (await h.sql(`SELECT 1 FROM lifecycle.vaults WHERE owner_intern_id = $1`, [intern.id])).length;
    expect(await vaults()).toBe(1);
    const archive = h.driver.hold('archive');
    expect(await h.delete(alice, intern.id)).toEqual({ deleting: true });
    await archive.arrived;
    expect(await h.get(alice, intern.id)).toMatchObject({ status: 'destroying', progress: null });
    // Delete while destroying: 202 again, nothing new; any other write: intern_busy.
    expect(await h.delete(alice, intern.id)).toEqual({ deleting: true });
    expect(await reasonOf(h.provision(alice, intern.id))).toBe('intern_busy');
    expect(await reasonOf(h.suspend(alice, intern.id))).toBe('intern_busy');
    archive.release();

    await h.untilGone(alice, intern.id);
    expect((await h.list(alice)).data.map((view) => view.id)).not.toContain(intern.id);
    expect(await reasonOf(h.icon(alice, intern.id))).toBe('not_found');
    expect(await reasonOf(h.delete(alice, intern.id))).toBe('not_found');
    expect(await vaults()).toBe(0);
    expect(await h.sql(`SELECT 1 FROM lifecycle.icons WHERE intern_id = $1`, [intern.id])).toEqual([]);
    const teardown = h.driver.callsOf(intern.id).map((call) => call.op).slice(3);
    expect(teardown).toEqual(['endRuns', 'stop', 'archive', 'purgeTranscripts', 'purgeEgressLog', 'removeDisk']);
    expect((await h.eventTypes(intern.id)).slice(-7)).toEqual([
      'DeletionRequested',
      'TeardownStepCompleted',
      'TeardownStepCompleted',
      'TeardownStepCompleted',
      'TeardownStepCompleted',
      'TeardownStepCompleted',
      'InternDestroyed',
    ]);

    const again = await h.create(alice, { name: 'dan' });
    expect(again.intern).toMatchObject({ name: 'dan', status: 'stopped' });
  });

  it('waits for the chat-app install when the organization requires it, and goes on once it is recorded', async () => {
    const WS2 = randomUUID();
    const carol = principal(WS2, { memberId: 'carol', chatappInstallRequired: true });
    const first = await h.create(carol, { name: 'eve', provision: true });
    expect(first.intern.status).toBe('awaiting_chatapp_install');
    const second = await h.create(carol, { name: 'fay' });
    expect(await h.provision(carol, second.intern.id)).toEqual({ provisioning: true });
    expect(await h.get(carol, second.intern.id)).toMatchObject({ status: 'awaiting_chatapp_install' });
    // Provision while waiting: nothing new.
    expect(await h.provision(carol, second.intern.id)).toEqual({ provisioning: true });
    await new Promise((done) => setTimeout(done, 400));
    expect(await h.get(carol, first.intern.id)).toMatchObject({ status: 'awaiting_chatapp_install', progress: null });
    expect(h.driver.callsOf(first.intern.id)).toEqual([]);
    // Another workspace's install releases nothing here.
    expect(await h.recordChatappInstall(randomUUID())).toMatchObject({ released: 0 });

    expect(await h.recordChatappInstall(WS2)).toEqual({ workspaceId: WS2, released: 2 });
    await h.untilStatus(carol, first.intern.id, 'running');
    await h.untilStatus(carol, second.intern.id, 'running');
    expect(await h.recordChatappInstall(WS2)).toEqual({ workspaceId: WS2, released: 0 });
    const third = await h.create(carol, { name: 'gil', provision: true });
    expect(third.intern.status).toBe('queued');
    await h.untilStatus(carol, third.intern.id, 'running');
  });

  it('releases an intern left waiting although the install was recorded (a provision racing the install)', async () => {
    const WS3 = randomUUID();
    const dora = principal(WS3, { memberId: 'dora', chatappInstallRequired: true });
    const { intern } = await h.create(dora, { name: 'gus', provision: true });
    expect(intern.status).toBe('awaiting_chatapp_install');
    // As if the install had committed just after this provision read "not installed".
    await h.sql(`INSERT INTO lifecycle.chatapp_installs (workspace_id, recorded_at) VALUES ($1, now() - interval '1 minute')`, [
      WS3,
    ]);
    await h.untilStatus(dora, intern.id, 'running');
  });

  it('a failing step fails the intern with its message; a later provision succeeds', async () => {
    const { intern } = await h.create(alice, { name: 'hal' });
    h.driver.behave('boot', { kind: 'fail', message: 'model acme/none is served by no configured provider' }, intern.id);
    await h.provision(alice, intern.id);
    const failed = await h.untilStatus(alice, intern.id, 'failed');
    expect(failed).toMatchObject({
      progress: null,
      last_failure_message: 'model acme/none is served by no configured provider',
    });
    expect(h.driver.count('health', intern.id)).toBe(0);
    // Suspend while failed: 200, no change.
    expect(await h.suspend(alice, intern.id)).toEqual({ suspended: true });
    expect((await h.get(alice, intern.id)).status).toBe('failed');

    h.driver.behave('boot', { kind: 'ok' }, intern.id);
    expect(await h.provision(alice, intern.id)).toEqual({ provisioning: true });
    const running = await h.untilStatus(alice, intern.id, 'running');
    expect(running.last_failure_message).toBeNull();
  });

  it('fails the intern when the runtime stays unhealthy beyond the bound', async () => {
    const { intern } = await h.create(alice, { name: 'ivy' });
    h.driver.behave('health', { kind: 'unhealthy', detail: 'runtime still starting' }, intern.id);
    await h.provision(alice, intern.id);
    const failed = await h.untilStatus(alice, intern.id, 'failed');
    expect(failed.last_failure_message).toBe('runtime did not become healthy within 1.5 s: runtime still starting');
    expect(h.driver.count('health', intern.id)).toBeGreaterThan(1);
    // The booted runtime is stopped.
    await eventually(async () => expect(h.driver.count('stop', intern.id)).toBe(1));
  });

  it('retries a step while the driver is away, without failing the intern', async () => {
    await h.driver.pause('prepareDisk');
    try {
      const { intern } = await h.create(alice, { name: 'jon', provision: true });
      await new Promise((done) => setTimeout(done, 1200));
      expect(await h.get(alice, intern.id)).toMatchObject({ status: 'provisioning', progress: { step_number: 1 } });
      h.driver.resume('prepareDisk');
      await h.untilStatus(alice, intern.id, 'running');
      expect(h.driver.count('prepareDisk', intern.id)).toBe(1);
    } finally {
      h.driver.resume('prepareDisk');
    }
  });

  it('archive failure: destroy_failed; delete needs the acknowledgement, then skips the archive', async () => {
    const intern = await runningIntern('kim');
    h.driver.behave('archive', { kind: 'fail', message: 'disk full' }, intern.id);
    await h.delete(alice, intern.id);
    const failed = await h.untilStatus(alice, intern.id, 'destroy_failed');
    expect(failed.last_failure_message).toBe('workspace_archive_failed: disk full');
    expect(await reasonOf(h.delete(alice, intern.id))).toBe('workspace_loss_not_acknowledged');
    expect(await reasonOf(h.delete(alice, intern.id, false))).toBe('workspace_loss_not_acknowledged');
    expect(await reasonOf(h.provision(alice, intern.id))).toBe('intern_busy');
    expect(await reasonOf(h.suspend(alice, intern.id))).toBe('intern_busy');

    expect(await h.delete(alice, intern.id, true)).toEqual({ deleting: true });
    await h.untilGone(alice, intern.id);
    expect(h.driver.count('archive', intern.id)).toBe(1);
    expect(h.driver.count('endRuns', intern.id)).toBe(1);
    expect(h.driver.count('stop', intern.id)).toBe(1);
    expect(h.driver.count('removeDisk', intern.id)).toBe(1);
  });

  it('another step failing in teardown: destroy_failed with the step; delete again retries it', async () => {
    const { intern } = await h.create(alice, { name: 'lou' });
    h.driver.behave('removeDisk', { kind: 'fail', message: 'device busy' }, intern.id);
    await h.delete(alice, intern.id);
    const failed = await h.untilStatus(alice, intern.id, 'destroy_failed');
    expect(failed.last_failure_message).toBe('disk_remove_failed: device busy');
    h.driver.behave('removeDisk', { kind: 'ok' }, intern.id);
    expect(await h.delete(alice, intern.id)).toEqual({ deleting: true });
    await h.untilGone(alice, intern.id);
    expect(h.driver.count('archive', intern.id)).toBe(1);
    expect(h.driver.count('removeDisk', intern.id)).toBe(2);
  });

  it('applies the visibility rules of update to provision, suspend, delete and icon', async () => {
    const { intern } = await h.create(alice, { name: 'max' });
    const stranger = principal(randomUUID(), { memberId: 'mallory' });
    const ownKey = principal(WS, { kind: 'intern', memberId: null, internId: intern.id });
    const otherKey = principal(WS, { kind: 'intern', memberId: null, internId: randomUUID() });
    for (const who of [stranger, otherKey]) {
      expect(await reasonOf(h.provision(who, intern.id))).toBe('not_found');
      expect(await reasonOf(h.suspend(who, intern.id))).toBe('not_found');
      expect(await reasonOf(h.delete(who, intern.id))).toBe('not_found');
      expect(await reasonOf(h.icon(who, intern.id))).toBe('not_found');
    }
    for (const id of ['not-a-uuid', randomUUID()]) {
      expect(await reasonOf(h.provision(alice, id))).toBe('not_found');
      expect(await reasonOf(h.icon(alice, id))).toBe('not_found');
    }
    const icon = await h.icon(ownKey, intern.id);
    expect(icon.sha256).toBe((await h.get(alice, intern.id)).icon_sha256);
    expect(Buffer.from(icon.pngBase64, 'base64').subarray(0, 8)).toEqual(
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    );
    expect(await h.suspend(ownKey, intern.id)).toEqual({ suspended: true });
    expect(await h.eventTypes(intern.id)).toEqual(['InternCreated']);
  });
});
