import {
  evolve,
  initialState,
  type InternCreated,
  type InternEvent,
  type InternPresent,
  type InternState,
} from '@interns/lifecycle-domain';
import { nextProvisioningAction, type ProvisioningAction, type ProvisioningFact } from './next-provisioning-action';

const internId = '8f0c1d5e-0000-4000-8000-000000000001';
const at = '2026-11-21T11:00:00.000Z';
const created: InternCreated = {
  type: 'InternCreated',
  data: {
    internId,
    organizationId: 'org-1',
    workspaceId: '8f0c1d5e-0000-4000-8000-0000000000aa',
    createdBy: 'member-1',
    name: 'ada',
    description: null,
    instructions: 'be brief',
    model: null,
    vaultId: '8f0c1d5e-0000-4000-8000-0000000000bb',
    attachedVaultId: null,
    iconSha256: 'ab'.repeat(32),
    at: '2026-11-21T10:00:00.000Z',
  },
};
const requested = (attempt: number): InternEvent => ({ type: 'ProvisionRequested', data: { attempt, at } });
const started = (attempt: number): InternEvent => ({ type: 'ProvisioningStarted', data: { attempt, at } });
const stepDone = (attempt: number, step: 'disk_prepare' | 'hostname_assign' | 'runtime_boot' | 'health_await'): InternEvent => ({
  type: 'ProvisioningStepCompleted',
  data: { attempt, step, hostname: step === 'hostname_assign' ? 'ada.interns.test' : null, at },
});
const provisioningFailed: InternEvent = {
  type: 'ProvisioningFailed',
  data: { attempt: 1, step: 'runtime_boot', message: 'no capacity', at },
};
const suspended: InternEvent = { type: 'InternSuspended', data: { at } };
const deletionRequested = (skipArchive: boolean): InternEvent => ({ type: 'DeletionRequested', data: { skipArchive, at } });
const teardownDone = (step: 'runs_end' | 'runtime_stop' | 'workspace_archive' | 'vault_remove' | 'disk_remove'): InternEvent => ({
  type: 'TeardownStepCompleted',
  data: { step, at },
});
const destroyed: InternEvent = { type: 'InternDestroyed', data: { at } };
const runningEvents = [
  created,
  requested(1),
  started(1),
  stepDone(1, 'disk_prepare'),
  stepDone(1, 'hostname_assign'),
  stepDone(1, 'runtime_boot'),
  stepDone(1, 'health_await'),
];

function present(state: InternState): InternPresent {
  if (state.kind !== 'present') throw new Error(`expected a present intern, got ${state.kind}`);
  return state;
}

/** Given the intern's events (and the read model's runtime flag), when its stream is loaded, then this action. */
function given(events: InternEvent[], readModel: { runtimeActive: boolean } = { runtimeActive: false }) {
  const intern = events.reduce(evolve, initialState());
  return {
    intern,
    whenLoaded: () => ({
      then: (expected: ProvisioningAction) =>
        expect(nextProvisioningAction({ kind: 'loaded', intern, runtimeActive: readModel.runtimeActive })).toStrictEqual(expected),
    }),
  };
}

/** When a driver call answered with this fact, then this action. */
function when(fact: ProvisioningFact) {
  return { then: (expected: ProvisioningAction) => expect(nextProvisioningAction(fact)).toStrictEqual(expected) };
}

describe('nextProvisioningAction', () => {
  describe('when the intern is loaded', () => {
    it('does nothing for an intern that does not exist', () => {
      given([]).whenLoaded().then({ kind: 'nothing' });
    });

    it('does nothing for an intern torn down, even with the runtime flag still set', () => {
      given([created, deletionRequested(false), destroyed], { runtimeActive: true }).whenLoaded().then({ kind: 'nothing' });
    });

    it('runs the first provisioning step once provisioning started', () => {
      const provisioning = given([created, requested(1), started(1)]);
      provisioning
        .whenLoaded()
        .then({ kind: 'run_provisioning_step', intern: present(provisioning.intern), attempt: 1, step: 'disk_prepare' });
    });

    it('runs the step after the last one recorded, in the current attempt', () => {
      const events = [created, requested(1), started(1), stepDone(1, 'disk_prepare'), provisioningFailed, requested(2), started(2)];
      const again = [...events, stepDone(2, 'disk_prepare'), stepDone(2, 'hostname_assign'), stepDone(2, 'runtime_boot')];
      const reprovisioning = given(again);
      reprovisioning
        .whenLoaded()
        .then({ kind: 'run_provisioning_step', intern: present(reprovisioning.intern), attempt: 2, step: 'health_await' });
    });

    it('does nothing for a provisioning intern at no step', () => {
      const intern: InternPresent = { ...present(given([created, requested(1), started(1)]).intern), provisioningStep: null };
      expect(nextProvisioningAction({ kind: 'loaded', intern, runtimeActive: false })).toEqual({ kind: 'nothing' });
    });

    it('does nothing for a queued, waiting or running intern, whatever the runtime flag says', () => {
      given([created, requested(1)], { runtimeActive: true }).whenLoaded().then({ kind: 'nothing' });
      given([created, requested(1), { type: 'ChatappInstallAwaited', data: { at } }], { runtimeActive: true })
        .whenLoaded()
        .then({ kind: 'nothing' });
      given(runningEvents, { runtimeActive: true }).whenLoaded().then({ kind: 'nothing' });
    });

    it('runs the first teardown step once deletion was requested', () => {
      given([...runningEvents, deletionRequested(false)])
        .whenLoaded()
        .then({ kind: 'run_teardown_step', internId, step: 'runs_end' });
    });

    it('runs the next teardown step not done, skipping the archive when asked to', () => {
      const stepsDone = [teardownDone('runs_end'), teardownDone('runtime_stop')];
      given([...runningEvents, deletionRequested(false), ...stepsDone])
        .whenLoaded()
        .then({ kind: 'run_teardown_step', internId, step: 'workspace_archive' });
      given([...runningEvents, deletionRequested(true), ...stepsDone])
        .whenLoaded()
        .then({ kind: 'run_teardown_step', internId, step: 'vault_remove' });
    });

    it('does nothing for an intern being destroyed whose every teardown step is recorded', () => {
      const allDone = ['runs_end', 'runtime_stop', 'workspace_archive', 'vault_remove', 'disk_remove'] as const;
      given([...runningEvents, deletionRequested(false), ...allDone.map(teardownDone)]).whenLoaded().then({ kind: 'nothing' });
    });

    it('does nothing for an intern whose teardown failed, even with the runtime flag set', () => {
      const teardownFailed: InternEvent = { type: 'TeardownFailed', data: { step: 'runs_end', message: 'refused', at } };
      given([...runningEvents, deletionRequested(false), teardownFailed], { runtimeActive: true }).whenLoaded().then({ kind: 'nothing' });
    });

    it('stops the runtime of a suspended intern that may still be up', () => {
      given([...runningEvents, suspended], { runtimeActive: true }).whenLoaded().then({ kind: 'stop_runtime', internId });
    });

    it('stops the runtime of a failed intern that may still be up', () => {
      given([created, requested(1), started(1), provisioningFailed], { runtimeActive: true })
        .whenLoaded()
        .then({ kind: 'stop_runtime', internId });
    });

    it('leaves a suspended or failed intern alone once its runtime is known to be down', () => {
      given([...runningEvents, suspended]).whenLoaded().then({ kind: 'nothing' });
      given([created, requested(1), started(1), provisioningFailed]).whenLoaded().then({ kind: 'nothing' });
    });
  });

  describe('when a provisioning step ran', () => {
    it('records the step done, with the hostname it assigned', () => {
      when({ kind: 'provisioning_step_ran', attempt: 2, step: 'hostname_assign', outcome: { kind: 'done', hostname: 'ada.interns.test' }, at }).then({
        kind: 'record_provisioning_step',
        command: { type: 'CompleteProvisioningStep', data: { attempt: 2, step: 'hostname_assign', hostname: 'ada.interns.test', at } },
        attempt: 2,
        step: 'hostname_assign',
        outcome: 'done',
      });
    });

    it('records a step done that assigns no hostname', () => {
      when({ kind: 'provisioning_step_ran', attempt: 1, step: 'runtime_boot', outcome: { kind: 'done', hostname: null }, at }).then({
        kind: 'record_provisioning_step',
        command: { type: 'CompleteProvisioningStep', data: { attempt: 1, step: 'runtime_boot', hostname: null, at } },
        attempt: 1,
        step: 'runtime_boot',
        outcome: 'done',
      });
    });

    it('records the provisioning failed at that step, with the driver message', () => {
      when({ kind: 'provisioning_step_ran', attempt: 1, step: 'disk_prepare', outcome: { kind: 'failed', message: 'disk full' }, at }).then({
        kind: 'record_provisioning_step',
        command: { type: 'FailProvisioning', data: { attempt: 1, step: 'disk_prepare', message: 'disk full', at } },
        attempt: 1,
        step: 'disk_prepare',
        outcome: 'failed',
      });
    });

    it('records nothing and checks again later while the runtime is not healthy yet', () => {
      when({ kind: 'provisioning_step_ran', attempt: 1, step: 'health_await', outcome: { kind: 'again', afterMs: 200 }, at }).then({
        kind: 'check_again',
        afterMs: 200,
      });
    });
  });

  describe('when a teardown step ran', () => {
    it('records the step done', () => {
      when({ kind: 'teardown_step_ran', step: 'runs_end', outcome: { kind: 'done' }, at }).then({
        kind: 'record_teardown_step',
        command: { type: 'CompleteTeardownStep', data: { step: 'runs_end', at } },
      });
    });

    it('records the step done together with its local side effect', () => {
      const removeVault = async () => undefined;
      const action = nextProvisioningAction({ kind: 'teardown_step_ran', step: 'vault_remove', outcome: { kind: 'done', inTransaction: removeVault }, at });
      expect(action).toStrictEqual({
        kind: 'record_teardown_step',
        command: { type: 'CompleteTeardownStep', data: { step: 'vault_remove', at } },
        inTransaction: removeVault,
      });
      expect(action.kind === 'record_teardown_step' && action.inTransaction).toBe(removeVault);
    });

    it('records the teardown failed at that step, with the driver message', () => {
      when({ kind: 'teardown_step_ran', step: 'workspace_archive', outcome: { kind: 'failed', message: 'archive refused' }, at }).then({
        kind: 'record_teardown_step',
        command: { type: 'FailTeardown', data: { step: 'workspace_archive', message: 'archive refused', at } },
      });
    });
  });

  describe('when a runtime stop ran', () => {
    it('clears the runtime flag, only at the version the stop was decided on', () => {
      when({ kind: 'runtime_stop_ran', outcome: { kind: 'stopped' }, revision: 9, at }).then({ kind: 'clear_runtime_active', revision: 9 });
    });

    it('records the stop given up on, and warns', () => {
      when({ kind: 'runtime_stop_ran', outcome: { kind: 'given_up', attempt: 3, message: 'stopping the runtime refused: busy' }, revision: 9, at }).then({
        kind: 'record_runtime_stop_failure',
        command: { type: 'RecordRuntimeStopFailure', data: { attempt: 3, message: 'stopping the runtime refused: busy', at } },
        warning: 'gave up stopping its runtime after 3 refusals: stopping the runtime refused: busy',
      });
    });
  });
});
