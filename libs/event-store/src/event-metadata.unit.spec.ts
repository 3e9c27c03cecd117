import type { Principal } from '@interns/contracts';
import { eventMetadata } from './event-metadata';

const member: Principal = {
  kind: 'user',
  organizationId: 'org-1',
  workspaceId: 'ws-1',
  memberId: 'm-1',
  keyId: 'k-1',
  internId: null,
  scopes: [],
  chatappInstallRequired: false,
};

describe('eventMetadata', () => {
  it("records a client's request with its principal as the actor and no causation", () => {
    expect(eventMetadata({ correlationId: 'c-1', principal: member })).toEqual({
      correlation_id: 'c-1',
      causation_id: null,
      actor: 'member:m-1',
    });
    expect(eventMetadata({ correlationId: 'c-2', principal: { ...member, memberId: null } }).actor).toBe('key:k-1');
  });

  it('records what the system does, for someone or on its own, with its cause when there is one', () => {
    expect(eventMetadata({ correlationId: 'c-3', actor: 'member:m-1' })).toEqual({
      correlation_id: 'c-3',
      causation_id: null,
      actor: 'member:m-1',
    });
    expect(eventMetadata({ correlationId: 'c-4', actor: null, causationId: 'e-1' })).toEqual({
      correlation_id: 'c-4',
      causation_id: 'e-1',
      actor: null,
    });
  });
});
