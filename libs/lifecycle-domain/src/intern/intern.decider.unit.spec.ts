import { deciderSpec } from '@interns/testing/decider-spec';
import type { InternCommand } from './intern.commands';
import { decide, evolve, initialState } from './intern.decider';
import type { InternCreated, InternEvent } from './intern.events';

const spec = deciderSpec({ initialState, evolve, decide });
const given = (events: InternEvent[]) => spec.given(events);

const created: InternCreated = {
  type: 'InternCreated',
  data: {
    internId: '8f0c1d5e-0000-4000-8000-000000000001',
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
const at = '2026-11-21T11:00:00.000Z';
const update = (changes: Extract<InternCommand, { type: 'UpdateIntern' }>['data']['changes']): InternCommand => ({
  type: 'UpdateIntern',
  data: { changes, at },
});

describe('intern decider', () => {
  describe('create', () => {
    it('creates a stopped intern from nothing', () => {
      const command: InternCommand = { type: 'CreateIntern', data: created.data };
      given([]).when(command).then([created]);
      expect(evolve(initialState(), created)).toMatchObject({ kind: 'present', status: 'stopped', name: 'ada' });
    });

    it('refuses to create the same intern twice', () => {
      given([created]).when({ type: 'CreateIntern', data: created.data }).thenThrows('intern_busy');
    });
  });

  describe('update', () => {
    it('records only the fields that change', () => {
      given([created]).when(update({ name: 'ada', description: 'helps', instructions: null })).then([
        { type: 'InternUpdated', data: { changes: { description: 'helps', instructions: null }, at } },
      ]);
    });

    it('records nothing when nothing changes', () => {
      given([created]).when(update({ name: 'ada', model: null })).then([]);
    });

    it('keeps applied changes for the next decision', () => {
      const renamed: InternEvent = { type: 'InternUpdated', data: { changes: { name: 'bea' }, at } };
      given([created, renamed]).when(update({ name: 'bea' })).then([]);
      given([created, renamed]).when(update({ name: 'ada' })).then([{ type: 'InternUpdated', data: { changes: { name: 'ada' }, at } }]);
    });

    it('answers not_found for an intern that does not exist', () => {
      given([]).when(update({ name: 'x1' })).thenThrows('not_found');
    });
  });

  describe('egress policy', () => {
    const allow = ['api.github.com', '*.example.org'];
    const changeEgress = (entries: string[]): InternCommand => ({ type: 'ChangeEgressPolicy', data: { allow: entries, at } });
    const changed = (entries: string[]): InternEvent => ({ type: 'EgressPolicyChanged', data: { allow: entries, at } });
    const running: InternEvent[] = [
      created,
      { type: 'ProvisionRequested', data: { attempt: 1, at } },
      { type: 'ProvisioningStarted', data: { attempt: 1, at } },
      { type: 'ProvisioningStepCompleted', data: { attempt: 1, step: 'disk_prepare', hostname: null, at } },
      { type: 'ProvisioningStepCompleted', data: { attempt: 1, step: 'hostname_assign', hostname: 'ada.interns.localhost', at } },
      { type: 'ProvisioningStepCompleted', data: { attempt: 1, step: 'runtime_boot', hostname: null, at } },
      { type: 'ProvisioningStepCompleted', data: { attempt: 1, step: 'health_await', hostname: null, at } },
    ];
    const destroying: InternEvent[] = [...running, { type: 'DeletionRequested', data: { skipArchive: false, at } }];

    it('starts empty and records a new list whole', () => {
      expect(evolve(initialState(), created)).toMatchObject({ egressAllow: [] });
      given([created]).when(changeEgress(allow)).then([changed(allow)]);
      expect([created, changed(allow)].reduce(evolve, initialState())).toMatchObject({ egressAllow: allow });
    });

    it('records nothing for the list it holds, and a change for the same entries in another order or an emptied list', () => {
      given([created]).when(changeEgress([])).then([]);
      given([created, changed(allow)]).when(changeEgress([...allow])).then([]);
      given([created, changed(allow)]).when(changeEgress([...allow].reverse())).then([changed([...allow].reverse())]);
      given([created, changed(allow)]).when(changeEgress([])).then([changed([])]);
    });

    it('may change while running, stopped, queued or failed', () => {
      given(running).when(changeEgress(allow)).then([changed(allow)]);
      given([...running, { type: 'InternSuspended', data: { at } }]).when(changeEgress(allow)).then([changed(allow)]);
      given([created, { type: 'ProvisionRequested', data: { attempt: 1, at } }]).when(changeEgress(allow)).then([changed(allow)]);
      const failed: InternEvent = { type: 'ProvisioningFailed', data: { attempt: 1, step: 'disk_prepare', message: 'disk full', at } };
      given([created, running[1], running[2], failed]).when(changeEgress(allow)).then([changed(allow)]);
    });

    it('keeps its list across a suspend and a provision', () => {
      const later: InternEvent[] = [changed(allow), { type: 'InternSuspended', data: { at } }, { type: 'ProvisionRequested', data: { attempt: 2, at } }];
      const state = [...running, ...later].reduce(evolve, initialState());
      expect(state).toMatchObject({ status: 'queued', egressAllow: allow });
    });

    it('refuses a change while the intern is torn down (intern_busy), and answers not_found once it is gone', () => {
      given(destroying).when(changeEgress(allow)).thenThrows('intern_busy');
      given([...destroying, { type: 'TeardownFailed', data: { step: 'runs_end', message: 'x', at } }]).when(changeEgress(allow)).thenThrows('intern_busy');
      given([...destroying, { type: 'InternDestroyed', data: { at } }]).when(changeEgress(allow)).thenThrows('not_found');
      given([]).when(changeEgress(allow)).thenThrows('not_found');
    });
  });
});
