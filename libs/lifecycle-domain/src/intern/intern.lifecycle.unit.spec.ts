/**
 * Every row of CONTRACT section 5's transition table, and every refusal, as decider specs.
 */
import { deciderSpec } from '@interns/testing/decider-spec';
import type { InternCommand } from './intern.commands';
import { decide, evolve, initialState, nextTeardownStep, progressOf, stateFrom } from './intern.decider';
import { type InternCreated, type InternEvent, PROVISIONING_STEPS, type ProvisioningStep, type TeardownStep } from './intern.events';

const spec = deciderSpec({ initialState, evolve, decide });
const at = '2026-11-21T12:00:00.000Z';

const createdData: InternCreated['data'] = {
  internId: '8f0c1d5e-0000-4000-8000-000000000001',
  organizationId: 'org-1',
  workspaceId: '8f0c1d5e-0000-4000-8000-0000000000aa',
  createdBy: 'member-1',
  name: 'ada',
  description: null,
  instructions: null,
  model: null,
  vaultId: '8f0c1d5e-0000-4000-8000-0000000000bb',
  attachedVaultId: null,
  iconSha256: 'ab'.repeat(32),
  at,
};
const created: InternEvent = { type: 'InternCreated', data: createdData };
const requested = (attempt = 1): InternEvent => ({ type: 'ProvisionRequested', data: { attempt, at } });
const awaited: InternEvent = { type: 'ChatappInstallAwaited', data: { at } };
const started = (attempt = 1): InternEvent => ({ type: 'ProvisioningStarted', data: { attempt, at } });
const stepDone = (step: ProvisioningStep, attempt = 1, hostname: string | null = null): InternEvent => ({
  type: 'ProvisioningStepCompleted',
  data: { attempt, step, hostname, at },
});
const provisionFailed: InternEvent = {
  type: 'ProvisioningFailed',
  data: { attempt: 1, step: 'runtime_boot', message: 'model x/y is served by no configured provider', at },
};
const suspended: InternEvent = { type: 'InternSuspended', data: { at } };
const deletion = (skipArchive = false): InternEvent => ({ type: 'DeletionRequested', data: { skipArchive, at } });
const teardownDone = (step: TeardownStep): InternEvent => ({ type: 'TeardownStepCompleted', data: { step, at } });
const teardownFailed = (step: TeardownStep, message = 'disk full'): InternEvent => ({
  type: 'TeardownFailed',
  data: { step, message, at },
});

const HOST = 'ada-8f0c1d5e.interns.localhost';
const running: InternEvent[] = [
  created,
  requested(),
  started(),
  stepDone('disk_prepare'),
  stepDone('hostname_assign', 1, HOST),
  stepDone('runtime_boot'),
  stepDone('health_await'),
];
const queued = [created, requested()];
const provisioning = [created, requested(), started()];
const awaiting = [created, requested(), awaited];
const failed = [...provisioning, provisionFailed];
const stopped = [created];
const destroying = [...running, deletion()];
const archiveFailed = [...destroying, teardownDone('runs_end'), teardownDone('runtime_stop'), teardownFailed('workspace_archive')];
const vaultFailed = [
  ...destroying,
  teardownDone('runs_end'),
  teardownDone('runtime_stop'),
  teardownDone('workspace_archive'),
  teardownFailed('vault_remove'),
];

const provision = (chatappInstallPending = false): InternCommand => ({
  type: 'RequestProvision',
  data: { chatappInstallPending, at },
});
const suspend: InternCommand = { type: 'SuspendIntern', data: { at } };
const remove = (acknowledgeWorkspaceLoss = false): InternCommand => ({
  type: 'RequestDeletion',
  data: { acknowledgeWorkspaceLoss, at },
});
const update: InternCommand = { type: 'UpdateIntern', data: { changes: { description: 'x' }, at } };
const status = (events: InternEvent[]) => {
  const state = stateFrom(events);
  return state.kind === 'present' ? state.status : state.kind;
};

describe('create', () => {
  it('(new) with provision false: stopped, never booted', () => {
    spec.given([]).when({ type: 'CreateIntern', data: { ...createdData, provision: false } }).then([created]);
    expect(status([created])).toBe('stopped');
  });

  it('(new) with provision true: queued', () => {
    spec.given([]).when({ type: 'CreateIntern', data: { ...createdData, provision: true } }).then([created, requested()]);
  });

  it('(new) with provision true while a chat-app install is pending: awaiting_chatapp_install', () => {
    spec
      .given([])
      .when({ type: 'CreateIntern', data: { ...createdData, provision: true, chatappInstallPending: true } })
      .then([created, requested(), awaited]);
    expect(status([created, requested(), awaited])).toBe('awaiting_chatapp_install');
  });
});

describe('provision', () => {
  it('stopped -> queued', () => spec.given(stopped).when(provision()).then([requested(1)]));
  it('failed -> queued, with a new attempt and the failure cleared', () => {
    spec.given(failed).when(provision()).then([requested(2)]);
    const state = stateFrom([...failed, requested(2)]);
    expect(state).toMatchObject({ status: 'queued', lastFailureMessage: null, attempt: 2 });
  });
  it('stopped after suspend -> queued again', () => spec.given([...running, suspended]).when(provision()).then([requested(2)]));
  it('queued -> awaiting_chatapp_install when the install is pending', () =>
    spec.given(stopped).when(provision(true)).then([requested(1), awaited]));
  it.each([
    ['queued', queued],
    ['provisioning', provisioning],
    ['awaiting_chatapp_install', awaiting],
  ])('while %s: accepted, nothing new happens', (_label, history) => spec.given(history).when(provision()).then([]));
  it('while running: 409 intern_busy', () => spec.given(running).when(provision()).thenThrows('intern_busy'));
  it('while destroying: 409 intern_busy', () => spec.given(destroying).when(provision()).thenThrows('intern_busy'));
  it('while destroy_failed: 409 intern_busy', () => spec.given(archiveFailed).when(provision()).thenThrows('intern_busy'));
  it('unknown intern: not_found', () => spec.given([]).when(provision()).thenThrows('not_found'));
});

describe('chat-app install', () => {
  it('awaiting_chatapp_install -> queued once recorded', () => {
    spec.given(awaiting).when({ type: 'RecordChatappInstall', data: { at } }).then([{ type: 'ChatappInstallRecorded', data: { at } }]);
    expect(status([...awaiting, { type: 'ChatappInstallRecorded', data: { at } }])).toBe('queued');
  });
  it('changes nothing in any other status', () =>
    spec.given(running).when({ type: 'RecordChatappInstall', data: { at } }).then([]));
});

describe('provisioning steps', () => {
  it('queued -> provisioning at step 1 of 4 when a slot frees', () => {
    spec.given(queued).when({ type: 'StartProvisioning', data: { at } }).then([started(1)]);
    expect(progressOf(stateFrom(provisioning))).toEqual({
      step_label: 'Preparing workspace disk',
      step_number: 1,
      total_steps: 4,
    });
  });
  it('does not start an intern that is no longer queued', () =>
    spec.given([...queued, suspended]).when({ type: 'StartProvisioning', data: { at } }).then([]));

  it('walks steps 1..4 with their labels, then running with the hostname and no progress', () => {
    const labels = ['Preparing workspace disk', 'Assigning hostname', 'Booting runtime', 'Waiting for runtime health'];
    let history = provisioning;
    for (const [index, step] of PROVISIONING_STEPS.entries()) {
      expect(progressOf(stateFrom(history))).toEqual({ step_label: labels[index], step_number: index + 1, total_steps: 4 });
      const hostname = step === 'hostname_assign' ? HOST : null;
      spec
        .given(history)
        .when({ type: 'CompleteProvisioningStep', data: { attempt: 1, step, hostname, at } })
        .then([stepDone(step, 1, hostname)]);
      history = [...history, stepDone(step, 1, hostname)];
    }
    expect(stateFrom(history)).toMatchObject({ status: 'running', hostname: HOST, provisioningStep: null });
    expect(progressOf(stateFrom(history))).toBeNull();
  });

  it('ignores a repeated step answer and answers of an older attempt', () => {
    const atStep2 = [...provisioning, stepDone('disk_prepare')];
    spec.given(atStep2).when({ type: 'CompleteProvisioningStep', data: { attempt: 1, step: 'disk_prepare', hostname: null, at } }).then([]);
    spec.given(atStep2).when({ type: 'CompleteProvisioningStep', data: { attempt: 0, step: 'hostname_assign', hostname: null, at } }).then([]);
  });

  it('a failing step -> failed with the message and no progress', () => {
    spec.given(provisioning.concat([stepDone('disk_prepare'), stepDone('hostname_assign', 1, HOST)]))
      .when({ type: 'FailProvisioning', data: { attempt: 1, step: 'runtime_boot', message: 'model x/y is served by no configured provider', at } })
      .then([provisionFailed]);
    expect(stateFrom(failed)).toMatchObject({ status: 'failed', lastFailureMessage: expect.stringContaining('no configured provider') });
    expect(progressOf(stateFrom(failed))).toBeNull();
  });

  it('a step answer after a suspend changes nothing', () =>
    spec
      .given([...provisioning, suspended])
      .when({ type: 'CompleteProvisioningStep', data: { attempt: 1, step: 'disk_prepare', hostname: null, at } })
      .then([]));
});

describe('suspend', () => {
  it.each([
    ['running', running],
    ['queued', queued],
    ['provisioning', provisioning],
    ['awaiting_chatapp_install', awaiting],
  ])('%s -> stopped', (_label, history) => {
    spec.given(history).when(suspend).then([suspended]);
    expect(status([...history, suspended])).toBe('stopped');
  });
  it('keeps the hostname (disk and configuration kept)', () =>
    expect(stateFrom([...running, suspended])).toMatchObject({ hostname: HOST }));
  it.each([
    ['stopped', stopped],
    ['failed', failed],
  ])('while %s: accepted, no change', (_label, history) => spec.given(history).when(suspend).then([]));
  it('while destroying: 409 intern_busy', () => spec.given(destroying).when(suspend).thenThrows('intern_busy'));
  it('while destroy_failed: 409 intern_busy', () => spec.given(archiveFailed).when(suspend).thenThrows('intern_busy'));
});

describe('runtime stop given up on (the process manager, after RUNTIME_STOP_ATTEMPTS refusals)', () => {
  const stopFailure = { attempt: 5, message: 'stopping the runtime refused: vm wedged', at };
  const recordStopFailure: InternCommand = { type: 'RecordRuntimeStopFailure', data: stopFailure };
  const stopFailed: InternEvent = { type: 'RuntimeStopFailed', data: stopFailure };
  const suspendedRunning = [...running, suspended];

  it.each([
    ['stopped', suspendedRunning],
    ['failed', failed],
  ])('while %s: recorded; the status stays, the message says why', (label, history) => {
    spec.given(history).when(recordStopFailure).then([stopFailed]);
    expect(stateFrom([...history, stopFailed])).toMatchObject({
      status: label,
      lastFailureMessage: 'runtime_stop_failed: stopping the runtime refused: vm wedged',
    });
  });
  it.each([
    ['running', running],
    ['queued', [...suspendedRunning, requested(2)]],
    ['destroying', [...suspendedRunning, deletion()]],
  ])('after the intern moved on (%s): nothing recorded', (_label, history) =>
    spec.given(history).when(recordStopFailure).then([]));
  it('suspend afterwards: accepted, no change', () => spec.given([...suspendedRunning, stopFailed]).when(suspend).then([]));
  it('provision afterwards: queued with a new attempt, the failure cleared', () => {
    spec.given([...suspendedRunning, stopFailed]).when(provision()).then([requested(2)]);
    expect(stateFrom([...suspendedRunning, stopFailed, requested(2)])).toMatchObject({ status: 'queued', lastFailureMessage: null });
  });
  it('delete afterwards: destroying from the first teardown step (runtime_stop included), the failure cleared', () => {
    spec.given([...suspendedRunning, stopFailed]).when(remove()).then([deletion()]);
    const state = stateFrom([...suspendedRunning, stopFailed, deletion()]);
    expect(state).toMatchObject({ status: 'destroying', lastFailureMessage: null });
    expect(nextTeardownStep(state)).toBe('runs_end');
  });
});

describe('update', () => {
  it('while destroying: 409 intern_busy', () => spec.given(destroying).when(update).thenThrows('intern_busy'));
  it('while destroy_failed: 409 intern_busy', () => spec.given(vaultFailed).when(update).thenThrows('intern_busy'));
  it('while running: applies (the model from the next provision)', () =>
    spec.given(running).when(update).then([{ type: 'InternUpdated', data: { changes: { description: 'x' }, at } }]));
});

describe('delete', () => {
  it.each([
    ['stopped', stopped],
    ['queued', queued],
    ['provisioning', provisioning],
    ['awaiting_chatapp_install', awaiting],
    ['running', running],
    ['failed', failed],
  ])('%s -> destroying', (_label, history) => {
    spec.given(history).when(remove()).then([deletion(false)]);
    expect(status([...history, deletion()])).toBe('destroying');
  });

  it('while destroying: accepted, nothing new dispatched', () => spec.given(destroying).when(remove()).then([]));

  it('walks the teardown steps in order, then the intern is gone', () => {
    let history = destroying;
    const steps: TeardownStep[] = ['runs_end', 'runtime_stop', 'workspace_archive', 'vault_remove', 'disk_remove'];
    for (const step of steps) {
      expect(nextTeardownStep(stateFrom(history))).toBe(step);
      const last = step === 'disk_remove';
      spec
        .given(history)
        .when({ type: 'CompleteTeardownStep', data: { step, at } })
        .then(last ? [teardownDone(step), { type: 'InternDestroyed', data: { at } }] : [teardownDone(step)]);
      history = [...history, teardownDone(step)];
    }
    expect(status([...history, { type: 'InternDestroyed', data: { at } }])).toBe('gone');
  });

  it('ignores an answer for a step that is not next', () =>
    spec.given(destroying).when({ type: 'CompleteTeardownStep', data: { step: 'disk_remove', at } }).then([]));

  it('a failing step -> destroy_failed, the message starting with the step', () => {
    expect(stateFrom(archiveFailed)).toMatchObject({
      status: 'destroy_failed',
      lastFailureMessage: 'workspace_archive_failed: disk full',
    });
  });

  it('destroy_failed at the archive: 409 workspace_loss_not_acknowledged without the acknowledgement', () =>
    spec.given(archiveFailed).when(remove(false)).thenThrows('workspace_loss_not_acknowledged'));

  it('destroy_failed at the archive, acknowledged: destroying with the archive skipped, done steps kept', () => {
    spec.given(archiveFailed).when(remove(true)).then([deletion(true)]);
    expect(nextTeardownStep(stateFrom([...archiveFailed, deletion(true)]))).toBe('vault_remove');
  });

  it('destroy_failed at another step: destroying again without acknowledgement, resuming at that step', () => {
    spec.given(vaultFailed).when(remove(false)).then([deletion(false)]);
    expect(nextTeardownStep(stateFrom([...vaultFailed, deletion(false)]))).toBe('vault_remove');
  });

  it('a gone intern: not_found for every command', () => {
    const gone = [...destroying, { type: 'InternDestroyed', data: { at } } as InternEvent];
    spec.given(gone).when(remove()).thenThrows('not_found');
    spec.given(gone).when(update).thenThrows('not_found');
    spec.given(gone).when(provision()).thenThrows('not_found');
  });
});
