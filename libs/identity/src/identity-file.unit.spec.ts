import { formatPath, looksLikeJwt, parseIdentityFile } from './identity-file';

describe('identity file', () => {
  it('defaults missing sections to empty and lowercases workspace ids', () => {
    const file = parseIdentityFile({
      workspaces: [{ id: 'ABCDEF01-0000-4000-8000-000000000001', organization_id: 'o', name: 'w' }],
    });
    expect(file).toEqual({
      organizations: [],
      workspaces: [{ id: 'abcdef01-0000-4000-8000-000000000001', organization_id: 'o', name: 'w' }],
      members: [],
      api_keys: [],
    });
  });

  it('names the offending path', () => {
    expect(() => parseIdentityFile({ organizations: [{ id: 'o', name: 'O', programme: 'yes', lifecycle_writes: true }] })).toThrow(
      /^organizations\[0\]\.programme: /,
    );
    expect(() => parseIdentityFile({ members: [{ id: 'm', organization_id: 'o', active: true, name: 'x' }] })).toThrow(
      'members[0]: unknown field "name"',
    );
    expect(() =>
      parseIdentityFile({ api_keys: [{ key: 'has space', kind: 'management', organization_id: 'o' }] }),
    ).toThrow('api_keys[0].key: must be printable ASCII without spaces');
    expect(() => parseIdentityFile(null)).toThrow('the file must hold a JSON object');
  });

  it('formats paths and recognises JWT-shaped credentials', () => {
    expect(formatPath(['api_keys', 2, 'member_id'])).toBe('api_keys[2].member_id');
    expect(formatPath([])).toBe('');
    expect(looksLikeJwt('a.b.c')).toBe(true);
    expect(looksLikeJwt('sk_live.abc')).toBe(false);
  });
});
