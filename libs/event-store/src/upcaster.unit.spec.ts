import type { StoredEvent } from './event.types';
import { type Upcaster, upcasterChain } from './upcaster';

function stored(type: string, schemaVersion: number, data: Record<string, unknown>): StoredEvent {
  return {
    globalPosition: '1',
    transactionId: '100',
    streamId: 'intern-1',
    streamType: 'intern',
    streamVersion: 1,
    eventId: '00000000-0000-4000-8000-000000000001',
    type,
    schemaVersion,
    data,
    metadata: { correlation_id: 'c-1', causation_id: null, actor: null },
    createdAt: new Date('2024-01-01T00:00:00Z'),
  };
}

// v1 had a single `name`; v2 split it; v3 added a default `tags`.
const splitName: Upcaster = {
  type: 'intern.created',
  fromVersion: 1,
  upcast: ({ name, ...rest }) => {
    const [first, ...others] = String(name).split(' ');
    return { ...rest, first_name: first, last_name: others.join(' ') };
  },
};
const defaultTags: Upcaster = { type: 'intern.created', fromVersion: 2, upcast: (data) => ({ tags: [], ...data }) };

describe('upcasterChain', () => {
  const upcast = upcasterChain([defaultTags, splitName]);

  it('lifts an old event through every later version, in order', () => {
    const result = upcast(stored('intern.created', 1, { name: 'Ada King Lovelace', role: 'analyst' }));
    expect(result.schemaVersion).toBe(3);
    expect(result.data).toEqual({ role: 'analyst', first_name: 'Ada', last_name: 'King Lovelace', tags: [] });
  });

  it('starts from the stored version', () => {
    const result = upcast(stored('intern.created', 2, { first_name: 'Ada', last_name: 'L', tags: ['x'] }));
    expect(result.schemaVersion).toBe(3);
    expect(result.data).toEqual({ first_name: 'Ada', last_name: 'L', tags: ['x'] });
  });

  it('passes current versions and other types through untouched', () => {
    const current = stored('intern.created', 3, { first_name: 'Ada' });
    const other = stored('intern.deleted', 1, { name: 'Ada Lovelace' });
    expect(upcast(current)).toBe(current);
    expect(upcast(other)).toBe(other);
  });

  it('leaves the stored event as it was', () => {
    const original = stored('intern.created', 1, { name: 'Ada Lovelace' });
    upcast(original);
    expect(original.schemaVersion).toBe(1);
    expect(original.data).toEqual({ name: 'Ada Lovelace' });
  });

  it('refuses two upcasters for the same type and version', () => {
    expect(() => upcasterChain([splitName, { ...splitName }])).toThrow(/two upcasters/);
  });

  it('refuses a fromVersion below 1', () => {
    expect(() => upcasterChain([{ ...splitName, fromVersion: 0 }])).toThrow(/invalid fromVersion/);
  });
});
