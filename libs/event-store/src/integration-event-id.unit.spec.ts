import { integrationEventId } from './integration-event-id';

const SOURCE = '0b8f3c2e-7a41-4d5e-9f60-1c2d3e4f5a6b';
const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('integrationEventId', () => {
  it('is a version 5 UUID, the same every time for the same source event and type', () => {
    const id = integrationEventId(SOURCE, 'intern.status_changed');
    expect(id).toMatch(UUID_V5);
    expect(integrationEventId(SOURCE, 'intern.status_changed')).toBe(id);
  });

  it('differs between the events one source event stands for, and between source events', () => {
    const ids = new Set([
      integrationEventId(SOURCE, 'intern.created'),
      integrationEventId(SOURCE, 'intern.status_changed'),
      integrationEventId('0b8f3c2e-7a41-4d5e-9f60-1c2d3e4f5a6c', 'intern.created'),
      SOURCE,
    ]);
    expect(ids.size).toBe(4);
  });
});
