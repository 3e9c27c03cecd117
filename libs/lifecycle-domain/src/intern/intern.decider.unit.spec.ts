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
});
