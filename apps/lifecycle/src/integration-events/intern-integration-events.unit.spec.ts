import type { StoredEvent } from '@interns/event-store';
import { INTERN_FOLD, type InternEvent, type InternState } from '@interns/lifecycle-domain';
import { internIntegrationEvents } from './intern-integration-events';

const INTERN = '8f0c1d5e-0000-4000-8000-000000000001';
const WORKSPACE = '8f0c1d5e-0000-4000-8000-0000000000aa';
const at = '2030-01-01T00:00:00.000Z';

const created: InternEvent = {
  type: 'InternCreated',
  data: {
    internId: INTERN,
    organizationId: 'acme',
    workspaceId: WORKSPACE,
    createdBy: 'alice',
    name: 'ada',
    description: null,
    instructions: 'long and private',
    model: null,
    vaultId: 'v',
    attachedVaultId: null,
    iconSha256: 'ab',
    at,
  },
};

/** Feeds `events` through the translator one by one, as the relay does; returns what each stood for. */
function translate(events: InternEvent[]) {
  let state: InternState = INTERN_FOLD.initialState();
  return events.map((domainEvent, index) => {
    const event = { streamVersion: index + 1, type: domainEvent.type, data: domainEvent.data } as unknown as StoredEvent;
    const after = INTERN_FOLD.evolve(state, event);
    const drafts = internIntegrationEvents({ event, before: state, after });
    state = after;
    return drafts;
  });
}

const status = (now: string, previous: string | null, progress: unknown = null) => ({
  type: 'intern.status_changed',
  workspace_id: WORKSPACE,
  data: { intern_id: INTERN, status: now, previous_status: previous, progress },
});

describe('intern integration events', () => {
  it('tells of a creation, an update (without the instructions) and each status and progress change', () => {
    const steps = (['disk_prepare', 'hostname_assign', 'runtime_boot', 'health_await'] as const).map(
      (step): InternEvent => ({ type: 'ProvisioningStepCompleted', data: { attempt: 1, step, hostname: null, at } }),
    );
    const [create, update, request, start, ...stepped] = translate([
      created,
      { type: 'InternUpdated', data: { changes: { model: 'acme/b', instructions: 'other' }, at } },
      { type: 'ProvisionRequested', data: { attempt: 1, at } },
      { type: 'ProvisioningStarted', data: { attempt: 1, at } },
      ...steps,
    ]);
    expect(create).toEqual([
      {
        type: 'intern.created',
        workspace_id: WORKSPACE,
        data: {
          intern_id: INTERN,
          organization_id: 'acme',
          workspace_id: WORKSPACE,
          created_by: 'alice',
          name: 'ada',
          description: null,
          model: null,
        },
      },
      status('stopped', null),
    ]);
    expect(update).toEqual([
      { type: 'intern.updated', workspace_id: WORKSPACE, data: { intern_id: INTERN, name: 'ada', description: null, model: 'acme/b' } },
    ]);
    expect(request).toEqual([status('queued', 'stopped')]);
    expect(start).toEqual([status('provisioning', 'queued', { step_label: 'Preparing workspace disk', step_number: 1, total_steps: 4 })]);
    expect(stepped).toEqual([
      [status('provisioning', 'provisioning', { step_label: 'Assigning hostname', step_number: 2, total_steps: 4 })],
      [status('provisioning', 'provisioning', { step_label: 'Booting runtime', step_number: 3, total_steps: 4 })],
      [status('provisioning', 'provisioning', { step_label: 'Waiting for runtime health', step_number: 4, total_steps: 4 })],
      [status('running', 'provisioning')],
    ]);
  });

  it('tells nothing of teardown steps, then that the intern is gone', () => {
    const translated = translate([
      created,
      { type: 'DeletionRequested', data: { skipArchive: true, at } },
      { type: 'TeardownStepCompleted', data: { step: 'runs_end', at } },
      { type: 'TeardownFailed', data: { step: 'runtime_stop', message: 'stuck', at } },
      { type: 'DeletionRequested', data: { skipArchive: true, at } },
      ...(['runtime_stop', 'vault_remove', 'disk_remove'] as const).map(
        (step): InternEvent => ({ type: 'TeardownStepCompleted', data: { step, at } }),
      ),
      { type: 'InternDestroyed', data: { at } },
    ]);
    expect(translated.slice(1)).toEqual([
      [status('destroying', 'stopped')],
      [],
      [status('destroy_failed', 'destroying')],
      [status('destroying', 'destroy_failed')],
      [],
      [],
      [],
      [{ type: 'intern.deleted', workspace_id: WORKSPACE, data: { intern_id: INTERN } }],
    ]);
  });

  it('tells nothing of a change of instructions alone, nor of an event that changes no status', () => {
    const [, instructions, suspendedWhileStopped] = translate([
      created,
      { type: 'InternUpdated', data: { changes: { instructions: 'other' }, at } },
      { type: 'InternSuspended', data: { at } },
    ]);
    expect(instructions).toEqual([]);
    expect(suspendedWhileStopped).toEqual([]);
  });

  it('tells nothing of a runtime stop given up on: the status stays (the failure message is on the intern)', () => {
    const [, stopFailed] = translate([
      created,
      { type: 'RuntimeStopFailed', data: { attempt: 5, message: 'stopping the runtime refused: wedged', at } },
      { type: 'ProvisionRequested', data: { attempt: 1, at } },
    ]);
    expect(stopFailed).toEqual([]);
  });

  it('tells nothing of an egress policy change: no status and no published field changes', () => {
    const [, changed] = translate([created, { type: 'EgressPolicyChanged', data: { allow: ['api.github.com'], at } }]);
    expect(changed).toEqual([]);
  });
});
