import { DomainError } from './errors';
import { CursorCodec } from './list-cursor';

describe('CursorCodec', () => {
  const codec = new CursorCodec('secret-one');
  const position = {
    createdAt: '2026-11-21T10:00:00.123Z',
    id: '0b6f0a4e-8f7c-4f43-9d0e-5f5b1a2c3d4e',
    scope: '6a1e5f0c-1111-4222-8333-944455556666',
  };

  it('round-trips a position', () => {
    expect(codec.decode(codec.encode(position))).toEqual(position);
  });

  it.each([
    ['garbage', 'not-a-cursor'],
    ['empty signature', `${codec.encode(position).split('.')[0]}.`],
    ['another secret', new CursorCodec('secret-two').encode(position)],
    ['a tampered payload', `${Buffer.from('["x","y","z"]').toString('base64url')}.${codec.encode(position).split('.')[1]}`],
  ])('rejects %s with invalid_body', (_label, cursor) => {
    expect(() => codec.decode(cursor)).toThrow(DomainError);
    try {
      codec.decode(cursor);
    } catch (error) {
      expect((error as DomainError).reason).toBe('invalid_body');
    }
  });
});
